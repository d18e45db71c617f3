"""The Python peer for scripts/bench-keyring: GETS reads and SETS writes of one item with the
`keyring` package (its SecretService backend), the way a Python app stores a secret. Prints the
median milliseconds per operation.

    python3 bench/keyring-peer.py SERVICE GETS SETS
"""
import statistics
import sys
import time

import keyring

service, gets, sets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
records = ['{"data":{"alias":"Ada","email":"ada@example.com"},"schema":"Person","version":3}',
           '{"data":{"alias":"Bob","email":"bob@example.com"},"schema":"Person","version":3}']
keyring.set_password(service, "bench", records[0])
samples = []
for i in range(sets):
    start = time.perf_counter()
    keyring.set_password(service, "bench", records[(i + 1) % 2])
    samples.append((time.perf_counter() - start) * 1e3)
print("set %.3f" % (statistics.median(samples) if samples else 0))
samples = []
for i in range(gets):
    start = time.perf_counter()
    if keyring.get_password(service, "bench") is None:
        sys.exit("keyring-peer: the item is missing")
    samples.append((time.perf_counter() - start) * 1e3)
print("get %.3f" % (statistics.median(samples) if samples else 0))
