DROP INDEX sessions_untouched;
