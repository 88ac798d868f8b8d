#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
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
