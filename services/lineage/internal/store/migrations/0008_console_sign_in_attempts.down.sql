DROP TABLE console_sign_in_attempts;
