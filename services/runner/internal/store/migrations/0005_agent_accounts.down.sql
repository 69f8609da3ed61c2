DROP TABLE account_parks;
DROP TABLE account_turns;
DROP TABLE agent_accounts;
