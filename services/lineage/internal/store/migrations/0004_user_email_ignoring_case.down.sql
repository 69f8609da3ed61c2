-- The addresses stay lower-cased: the case they were typed in is not kept.
DROP INDEX users_email_lower;
