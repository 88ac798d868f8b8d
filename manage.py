#!/usr/bin/env python
import os
import sys

# The loopback fakes sign nothing and read no setting, so they start without SECRET_KEY: the settings,
# which refuse to load without one while DEBUG is off, are loaded for them as on a development machine.
NEEDS_NO_SECRET = {"llm_fake_server", "mturk_fake_server"}
# Commands that read and write no row: they run without starting the embedded PostgreSQL (the docs build
# writes the API schema on a machine where no cluster runs, or where another checkout's holds the port).
NEEDS_NO_DATABASE = NEEDS_NO_SECRET | {"spectacular", "collectstatic", "help", "version"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    if len(sys.argv) > 1 and sys.argv[1] in NEEDS_NO_SECRET and not os.environ.get("SECRET_KEY"):
        os.environ["DEBUG"] = "1"
    elif not os.environ.get("DATABASE_URL") and len(sys.argv) > 1 and sys.argv[1] not in NEEDS_NO_DATABASE:
        # No server named: on a development machine (DEBUG on, as `make run` sets it) the project's
        # embedded PostgreSQL, started here when it is not running. Never in production, where a forgotten
        # DATABASE_URL would otherwise make and migrate a local cluster beside the real one.
        from assay import embedded_db
        from assay.env import env_bool

        if not env_bool("DEBUG", False):
            sys.exit(
                "DATABASE_URL is not set: name your PostgreSQL server (postgres://user:password@host/db), "
                "or set DEBUG=1 on a development machine to use the embedded one"
            )
        try:
            os.environ["DATABASE_URL"] = embedded_db.ensure_default()
        except embedded_db.EmbeddedDatabaseError as error:
            sys.exit(f"embedded PostgreSQL: {error}")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
        sys.stdout.flush()  # here, not at exit, so a closed pipe is caught below
    except BrokenPipeError:
        # The reader went away (`manage.py export_qrels ... | head`): stop quietly, as `cat` does. Later
        # writes and the flush at exit go to /dev/null, so Python prints no second traceback either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE, the status a shell reports for a command killed by a closed pipe


if __name__ == "__main__":
    main()
