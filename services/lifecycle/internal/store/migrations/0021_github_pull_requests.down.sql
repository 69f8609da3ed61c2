DROP TABLE github_deliveries;
DROP TABLE pull_requests;
