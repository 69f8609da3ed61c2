DROP TABLE session_nodes;
