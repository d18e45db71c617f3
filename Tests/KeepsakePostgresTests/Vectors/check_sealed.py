#!/usr/bin/env python3
"""An independent implementation of Keepsake's sealed PostgreSQL values, written from
docs/FORMAT.md ("Sealed PostgreSQL values", §11, and "Table seal", §11.2) alone, without libsodium:
checks sealed-values.json byte for byte (seals every record's plaintext with its nonce in format 1
and in format 2, which names the key, and opens the results; derives the master key's fingerprint,
which is also its key id).

Needs Python 3.9+ and the `cryptography` package.
Run: python3 Tests/KeepsakePostgresTests/Vectors/check_sealed.py
     (--write regenerates the outputs of the JSON from its inputs)
"""
import hashlib
import json
import pathlib
import struct
import sys

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

HEADER = b"KSPG\x01"
HEADER_V2 = b"KSPG\x02"


def kdf(key: bytes, subkey_id: int, ctx: bytes, size: int = 32) -> bytes:
    return hashlib.blake2b(b"", digest_size=size, key=key,
                           salt=struct.pack("<Q", subkey_id) + bytes(8), person=ctx + bytes(8)).digest()


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


def associated_data(table: str, record_key: str, prefix: bytes = HEADER) -> bytes:
    t = table.encode()
    return prefix + struct.pack(">I", len(t)) + t + record_key.encode()


def seal(sealing_key: bytes, nonce: bytes, table: str, record_key: str, plaintext: bytes,
         prefix: bytes = HEADER) -> bytes:
    ad = associated_data(table, record_key, prefix)
    body = ChaCha20Poly1305(hchacha20(sealing_key, nonce[:16])).encrypt(bytes(4) + nonce[16:], plaintext, ad)
    return prefix + nonce + body


def open_sealed(sealing_keys: dict, table: str, record_key: str, value: bytes) -> bytes:
    """Opens a value of format 1 (tried with every key) or 2 (the key its id names)."""
    if value[:4] != b"KSPG" or len(value) < 5 or value[4] not in (1, 2):
        raise ValueError("not a sealed value of format 1 or 2")
    prefix = value[:5] if value[4] == 1 else value[:21]
    if len(value) < len(prefix) + 40:
        raise ValueError("too short")
    keys = list(sealing_keys.values()) if value[4] == 1 else [sealing_keys[value[5:21]]]
    nonce = value[len(prefix):len(prefix) + 24]
    for key in keys:
        try:
            return ChaCha20Poly1305(hchacha20(key, nonce[:16])).decrypt(
                bytes(4) + nonce[16:], value[len(prefix) + 24:], associated_data(table, record_key, prefix))
        except Exception:
            continue
    raise ValueError("does not open")


def store_id(identity: str) -> str:
    return hashlib.blake2b(("keepsake-postgres:" + identity).encode(), digest_size=16).hexdigest()


def key_fingerprint(master_key: bytes) -> str:
    return kdf(master_key, 2, b"KSPGseal", 16).hex()


def outputs(v: dict) -> dict:
    sealing_key = kdf(bytes.fromhex(v["masterKey"]), 1, b"KSPGseal")
    fingerprint = key_fingerprint(bytes.fromhex(v["masterKey"]))
    key_id = bytes.fromhex(fingerprint)
    prefix_v2 = HEADER_V2 + key_id
    result = {"sealingKey": sealing_key.hex(), "storeId": store_id(v["identity"]),
              "keyFingerprint": fingerprint, "records": []}
    for r in v["records"]:
        nonce = bytes.fromhex(r["nonce"])
        plaintext = r["plaintext"].encode()
        sealed = seal(sealing_key, nonce, r["table"], r["recordKey"], plaintext)
        sealed_v2 = seal(sealing_key, nonce, r["table"], r["recordKey"], plaintext, prefix_v2)
        for value in (sealed, sealed_v2):
            assert open_sealed({key_id: sealing_key}, r["table"], r["recordKey"], value) == plaintext
        result["records"].append({
            "associatedData": associated_data(r["table"], r["recordKey"]).hex(), "sealed": sealed.hex(),
            "associatedDataV2": associated_data(r["table"], r["recordKey"], prefix_v2).hex(),
            "sealedV2": sealed_v2.hex()})
    return result


def main() -> int:
    path = pathlib.Path(__file__).with_name("sealed-values.json")
    v = json.loads(path.read_text(encoding="utf-8"))
    got = outputs(v)
    if "--write" in sys.argv:
        v["sealingKey"], v["storeId"], v["keyFingerprint"] = got["sealingKey"], got["storeId"], got["keyFingerprint"]
        for r, out in zip(v["records"], got["records"]):
            r.update(out)
        path.write_text(json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path.name}")
        return 0
    failures = 0
    for field in ("sealingKey", "storeId", "keyFingerprint"):
        if v.get(field) != got[field]:
            print(f"{field}: expected {v.get(field)}, computed {got[field]}"); failures += 1
    for index, (r, out) in enumerate(zip(v["records"], got["records"])):
        for field in ("associatedData", "sealed", "associatedDataV2", "sealedV2"):
            if r[field] != out[field]:
                print(f"records[{index}].{field} differs"); failures += 1
    print(f"{path.name}: {len(v['records'])} records, {'OK' if failures == 0 else f'{failures} differences'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
