DROP TABLE console_sign_ins;
