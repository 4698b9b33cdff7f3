"""Deletes a Serene job when the process that started this one exits.

    _job_guard.py SERENE_CTL CONTROL JOB     (stdin: a pipe from rank 0)

serene.job starts it on rank 0 of a job it created. It reads its stdin until
end of file, which comes when rank 0 closes the pipe (at its close()) or
exits, however it exits, then deletes the job through the runtime API. The
token, if any, comes from SERENE_TOKEN_FILE, which serene-ctl reads. It runs
in a session of its own so that a Ctrl-C meant for the training script does
not stop it before rank 0 has gone.
"""

import signal
import subprocess
import sys


def main():
    ctl, control, job = sys.argv[1:4]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    done = subprocess.run([ctl, "--control", control, "job", "delete", job],
                          capture_output=True, text=True, timeout=30)
    # A job already gone (the switch restarted, an operator deleted it) is no error.
    if done.returncode != 0 and "does not exist" not in done.stderr:
        sys.stderr.write(f"serene: could not delete job {job} on {control}: {done.stderr}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
