DROP INDEX alerts_newest_first;
