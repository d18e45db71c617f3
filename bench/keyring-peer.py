"""The Python peer for scripts/bench-keyring: GETS reads and SETS writes of one item with the
`keyring` package (its SecretService backend), the way a Python app stores a secret. Prints the
median milliseconds per operation.

    python3 bench/keyring-peer.py SERVICE GETS SETS

`keyring.set_password` is Collection.CreateItem with replace, over a new D-Bus connection for
each call; SERVICE should be new for each run, so that the first call creates the item.
KeePassXC asks the user before a client replaces an item it did not create, and each new
connection is a new client there, so on KeePassXC the bench runs this peer with SETS 0.
Every call has a deadline (KEYRING_PEER_DEADLINE seconds, default 20): a call that does not
answer in time ends the program with status 124 and names the call, instead of hanging.
"""
import os
import signal
import statistics
import sys
import time

import keyring

service, gets, sets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
deadline = int(os.environ.get("KEYRING_PEER_DEADLINE", "20"))
records = ['{"data":{"alias":"Ada","email":"ada@example.com"},"schema":"Person","version":3}',
           '{"data":{"alias":"Bob","email":"bob@example.com"},"schema":"Person","version":3}']
phase = "start"


def expired(signum, frame):
    sys.stderr.write("keyring-peer: %s did not answer within %d s (a prompt nobody answers?)\n" % (phase, deadline))
    sys.stderr.flush()
    os._exit(124)


def begin(what):
    global phase
    phase = what
    signal.alarm(deadline)


signal.signal(signal.SIGALRM, expired)
begin("the first set_password (a new item)")
keyring.set_password(service, "bench", records[0])
signal.alarm(0)
samples = []
for i in range(sets):
    start = time.perf_counter()
    begin("a set_password (CreateItem with replace)")
    keyring.set_password(service, "bench", records[(i + 1) % 2])
    signal.alarm(0)
    samples.append((time.perf_counter() - start) * 1e3)
print("set %.3f" % (statistics.median(samples) if samples else 0))
samples = []
for i in range(gets):
    start = time.perf_counter()
    begin("a get_password")
    if keyring.get_password(service, "bench") is None:
        sys.exit("keyring-peer: the item is missing")
    signal.alarm(0)
    samples.append((time.perf_counter() - start) * 1e3)
print("get %.3f" % (statistics.median(samples) if samples else 0))
