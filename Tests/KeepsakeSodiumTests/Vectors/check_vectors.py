#!/usr/bin/env python3
"""An independent reader/writer of the Keepsake encrypted store format, written from
docs/FORMAT.md alone (no libsodium): checks the test vectors byte for byte.

Needs Python 3.9+ and the `cryptography` package (>= 44, for Argon2id).
Run: python3 Tests/KeepsakeSodiumTests/Vectors/check_vectors.py
"""
import hashlib
import json
import pathlib
import struct
import sys

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id


def kdf(key: bytes, subkey_id: int, ctx: bytes) -> bytes:
    return hashlib.blake2b(b"", digest_size=32, key=key,
                           salt=struct.pack("<Q", subkey_id) + bytes(8), person=ctx + bytes(8)).digest()


def h(message: bytes, key: bytes = b"") -> bytes:
    return hashlib.blake2b(message, digest_size=32, key=key).digest()


def _rotl(v, c):
    return ((v << c) & 0xffffffff) | (v >> (32 - c))


def hchacha20(key: bytes, nonce16: bytes) -> bytes:
    s = list(struct.unpack("<4I", b"expand 32-byte k") + struct.unpack("<8I", key) + struct.unpack("<4I", nonce16))

    def qr(a, b, c, d):
        s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = _rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = _rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = _rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = _rotl(s[b] ^ s[c], 7)

    for _ in range(10):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
    return struct.pack("<8I", *(s[0:4] + s[12:16]))


def xseal(key, nonce, plaintext, ad):
    return ChaCha20Poly1305(hchacha20(key, nonce[:16])).encrypt(bytes(4) + nonce[16:], plaintext, ad)


def xopen(key, nonce, ciphertext, ad):
    return ChaCha20Poly1305(hchacha20(key, nonce[:16])).decrypt(bytes(4) + nonce[16:], ciphertext, ad)


HEADER_MAGIC = b"KSSTORE\x01"
RECORD_MAGIC = b"KSRECRD\x01"


def check_rotated(path: pathlib.Path, v: dict) -> None:
    """Format 2 (FORMAT.md section 6.1): a header wrapping a key set, records naming their generation."""
    x = bytes.fromhex
    mk = x(v["masterKey"])
    wrap_key, check_key = kdf(mk, 1, b"KSmaster"), kdf(mk, 2, b"KSmaster")
    keys = [(k["generation"], x(k["dataKey"])) for k in v["dataKeys"]]
    rks = {g: kdf(dk, 1, b"KSrecord") for g, dk in keys}
    assert [rks[k["generation"]].hex() for k in v["dataKeys"]] == [k["recordKey"] for k in v["dataKeys"]], "record keys"
    nk = kdf(keys[0][1], 2, b"KSrecord")  # generation 1's name key, for the store's life
    assert nk.hex() == v["nameKey"], "name key"
    store_id = x(v["storeId"])

    # The header: format 1's first 64 bytes with version 2, then primary, count, reserved.
    fields = (HEADER_MAGIC + struct.pack("<HBB", 2, 1, 0) + store_id + bytes(16)
              + struct.pack("<QQI", 0, 0, v["keyGeneration"]) + struct.pack("<IHH", keys[-1][0], len(keys), 0))
    assert len(fields) == 72
    key_set = nk + b"".join(struct.pack("<I", g) + dk for g, dk in keys)
    nonce = x(v["rotationWrapNonce"])
    header = fields + nonce + xseal(wrap_key, nonce, key_set, fields)
    header += h(header, check_key)
    header += h(header)
    assert len(header) == 208 + 36 * len(keys)
    assert header.hex() == v["headerFile"], "format-2 header bytes"
    wrapped_end = 96 + 32 + 36 * len(keys) + 16
    assert xopen(wrap_key, header[72:96], header[96:wrapped_end], header[:72]) == key_set

    for r in v["records"]:
        key, g = r["recordKey"].encode(), r["generation"]
        name_hash = h(key, nk)
        assert name_hash.hex() == r["nameHash"] and r["fileName"] == name_hash.hex() + ".ksr", "name"
        label = struct.pack("<H", 1) if r["formatVersion"] == 1 else struct.pack("<HI", 2, g)
        ad = RECORD_MAGIC + label + store_id + name_hash
        assert ad.hex() == r["associatedData"], "associated data"
        plaintext = struct.pack("<I", len(key)) + key + r["plaintext"].encode()
        rnonce = x(r["nonce"])
        file = RECORD_MAGIC + label + rnonce + xseal(rks[g], rnonce, plaintext, ad)
        assert file.hex() == r["file"], "record file bytes for " + r["recordKey"]
        start = 8 + len(label)
        assert xopen(rks[g], file[start:start + 24], file[start + 24:], ad) == plaintext
    print(f"{path.name}: OK (format 2, {len(keys)} data keys, {len(v['records'])} records)")


def check(path: pathlib.Path) -> None:
    v = json.loads(path.read_text())
    if v["formatVersion"] == 2:
        check_rotated(path, v)
        return
    x = bytes.fromhex
    if v["keyKind"] == "passphrase":
        mk = Argon2id(salt=x(v["salt"]), length=32, iterations=v["opsLimit"], lanes=1,
                      memory_cost=v["memLimit"] // 1024).derive(v["passphrase"].encode())
        kind, salt, ops, mem = 2, x(v["salt"]), v["opsLimit"], v["memLimit"]
    else:
        mk = x(v["masterKey"])
        kind, salt, ops, mem = 1, bytes(16), 0, 0
    assert mk.hex() == v["masterKey"], "master key"
    wrap_key, check_key = kdf(mk, 1, b"KSmaster"), kdf(mk, 2, b"KSmaster")
    dk = x(v["dataKey"])
    rk, nk = kdf(dk, 1, b"KSrecord"), kdf(dk, 2, b"KSrecord")
    assert [wrap_key.hex(), check_key.hex(), rk.hex(), nk.hex()] == [
        v["derived"][k] for k in ("wrapKey", "checkKey", "recordKey", "nameKey")], "derived keys"

    # Write the header from the inputs.
    store_id = x(v["storeId"])
    fields = (HEADER_MAGIC + struct.pack("<HBB", 1, kind, 0) + store_id + salt
              + struct.pack("<QQI", ops, mem, v["keyGeneration"]))
    assert len(fields) == 64
    header = fields + x(v["wrapNonce"]) + xseal(wrap_key, x(v["wrapNonce"]), dk, fields)
    header += h(header, check_key)
    header += h(header)
    assert header.hex() == v["headerFile"], "header bytes"
    # Read it back: checksum, key check, unwrap.
    assert h(header[:168]) == header[168:] and h(header[:136], check_key) == header[136:168]
    assert xopen(wrap_key, header[64:88], header[88:136], header[:64]) == dk

    for r in v["records"]:
        key = r["recordKey"].encode()
        name_hash = h(key, nk)
        assert name_hash.hex() == r["nameHash"] and r["fileName"] == name_hash.hex() + ".ksr", "name"
        ad = RECORD_MAGIC + struct.pack("<H", 1) + store_id + name_hash
        assert ad.hex() == r["associatedData"], "associated data"
        nonce = x(r["nonce"])
        plaintext = struct.pack("<I", len(key)) + key + r["plaintext"].encode()
        file = RECORD_MAGIC + struct.pack("<H", 1) + nonce + xseal(rk, nonce, plaintext, ad)
        assert file.hex() == r["file"], "record file bytes for " + r["recordKey"]
        opened = xopen(rk, file[10:34], file[34:], ad)
        (n,) = struct.unpack("<I", opened[:4])
        assert opened[4:4 + n] == key and opened[4 + n:] == r["plaintext"].encode()
    print(f"{path.name}: OK ({len(v['records'])} records)")


if __name__ == "__main__":
    here = pathlib.Path(__file__).parent
    for vector in sorted(here.glob("*.json")):
        check(vector)
    sys.exit(0)
