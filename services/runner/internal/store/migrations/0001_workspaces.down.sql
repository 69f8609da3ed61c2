DROP TABLE workspaces;
