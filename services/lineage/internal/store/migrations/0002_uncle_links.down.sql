DROP TABLE session_node_tombstones;
DROP TABLE session_uncle_links;
