-- console_sessions.admin_token_hash held a bare SHA-256 of ADMIN_TOKEN, which a copy of the table could be used to
-- guess the token against offline. It now holds a value derived from the token by HKDF (api/console/session.ts), which
-- no longer matches the rows stored before: those sessions are removed (their operators sign in again).
DELETE FROM console_sessions;
