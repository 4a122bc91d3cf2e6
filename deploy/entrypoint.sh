#!/bin/sh
# The image's entry point: runs `mammamia ARGS...` as the container's main process
# (exec, so SIGTERM reaches the server itself and starts its drain).
#
# MAMMAMIA_DB_PASSWORD_FILE: a file whose first line is the PostgreSQL password; it
# is handed to libpq as PGPASSWORD, so the database URL (MAMMAMIA_DB or --db) can
# leave the password out and no password is written in a compose file or manifest.
set -eu
if [ -n "${MAMMAMIA_DB_PASSWORD_FILE:-}" ]; then
    PGPASSWORD=$(head -n 1 "$MAMMAMIA_DB_PASSWORD_FILE")
    if [ -z "$PGPASSWORD" ]; then
        echo "mammamia: no password in $MAMMAMIA_DB_PASSWORD_FILE" >&2
        exit 2
    fi
    export PGPASSWORD
fi
exec mammamia "$@"
