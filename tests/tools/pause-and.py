#!/usr/bin/env python3
"""pause-and.py POINT ACTION [--show DIR] -- COMMAND...: runs COMMAND with
snug's test hook SNUG_TEST_PAUSE=POINT@MARKER (core/SignalCleanup.h), waits
until it pauses at POINT, prints DIR's entries (--show, sorted, one a
line), does ACTION, lets it go on, and prints how it ended: "exit N" or
"signal NAME". COMMAND's output passes through.

ACTION: signal:NAME (SIGNAME sent to COMMAND, which is then not resumed:
the signal ends it), truncate:PATH:BYTES (PATH cut to BYTES, then COMMAND
resumes), overwrite:PATH (PATH rewritten in place, same size, every byte
inverted, then COMMAND resumes), rename:FROM:TO (FROM renamed over TO,
then COMMAND resumes) or resume (nothing done)."""
import os
import signal
import subprocess
import sys
import tempfile
import time

args = sys.argv[1:]
split = args.index("--")
options, command = args[:split], args[split + 1:]
point, action = options[0], options[1]
show = options[options.index("--show") + 1] if "--show" in options else None

with tempfile.TemporaryDirectory() as scratch:
    marker = os.path.join(scratch, "paused")
    env = dict(os.environ, SNUG_TEST_PAUSE=f"{point}@{marker}")

    def default_signals():
        # An inherited SIG_IGN (lit, a background job) would stay ignored.
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)

    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                               preexec_fn=default_signals)
    deadline = time.monotonic() + 60
    while not os.path.exists(marker):
        if process.poll() is not None:
            sys.exit(f"pause-and: the command ended (status "
                     f"{process.returncode}) before it paused at '{point}'")
        if time.monotonic() > deadline:
            process.kill()
            sys.exit(f"pause-and: no pause at '{point}' within 60 s")
        time.sleep(0.01)
    sys.stdout.flush()
    if show is not None:
        for name in sorted(os.listdir(show)):
            print(name)
        sys.stdout.flush()
    kind, _, rest = action.partition(":")
    if kind == "signal":
        process.send_signal(getattr(signal, "SIG" + rest))
    elif kind == "truncate":
        path, _, size = rest.rpartition(":")
        os.truncate(path, int(size))
        os.remove(marker)
    elif kind == "overwrite":
        with open(rest, "r+b") as file:
            data = bytes(b ^ 0xFF for b in file.read())
            file.seek(0)
            file.write(data)
        os.remove(marker)
    elif kind == "rename":
        source, _, target = rest.partition(":")
        os.replace(source, target)
        os.remove(marker)
    elif kind == "resume":
        os.remove(marker)
    else:
        process.kill()
        sys.exit(f"pause-and: unknown action '{action}'")
    status = process.wait()
    print(f"signal {signal.Signals(-status).name[3:]}" if status < 0
          else f"exit {status}")
