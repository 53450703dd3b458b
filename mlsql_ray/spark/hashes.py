"""Spark's hash functions on DuckDB: ``hash`` (Spark's Murmur3_x86_32, seed 42), ``xxhash64``
(XXH64, seed 42), ``crc32``, ``sha2`` of 224/384/512 bits refused (DuckDB has SHA-256 only).

DuckDB's own ``hash`` is another function altogether, so ``hash(...)`` silently gave other numbers.
No DuckDB function computes Spark's hashes, so these are macros over DuckDB's 128-bit integers,
as Spark's ``HashExpression`` defines them: each argument hashes into the running seed (a NULL
leaves it as it is); an int, byte, short, date or boolean hashes as an int, a long, timestamp or
double (its IEEE bits) as a long, a decimal of up to 18 digits as its unscaled long, a string or
binary as its bytes, an array element by element. A value of another type (map, struct, a wider
decimal) fails with DuckDB's message that the macro does not take it.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from .calls import call, fail, hygienic, integer_of, number
from .arrays_maps import gated
from .family import Family

_M32 = "4294967296"
_P1, _P2, _P3, _P4, _P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                           9650029242287828579, 2870177450012600261)  # XXH64's primes
_M64 = "18446744073709551616::UHUGEINT"


def _u(value: int) -> str:
    return f"{value}::UHUGEINT"


# the raw bits of doubles and floats (Double.doubleToLongBits, Float.floatToIntBits) as unsigned
# integers; Spark hashes -0.0 as 0.0
_BITS = {
    "spark_exponent2": """(a) AS list_transform([CAST(floor(log2(a)) AS INTEGER)], lambda e:
        e - CASE WHEN pow(2.0, e) > a THEN 1 ELSE 0 END + CASE WHEN pow(2.0, e + 1) <= a THEN 1 ELSE 0 END)[1]""",
    "spark_double_bits": """(d) AS CASE
        WHEN d = 0 THEN 0::HUGEINT WHEN isnan(d) THEN 9221120237041090560::HUGEINT
        WHEN isinf(d) THEN CASE WHEN d > 0 THEN 9218868437227405312::HUGEINT ELSE 18442240474082181120::HUGEINT END
        ELSE CASE WHEN d < 0 THEN 9223372036854775808::HUGEINT ELSE 0::HUGEINT END
             + list_transform([abs(d)], lambda a: CASE WHEN a < 2.2250738585072014e-308
                 THEN CAST(a * pow(2.0, 1022) * pow(2.0, 52) AS HUGEINT)
                 ELSE list_transform([spark_exponent2(a)], lambda e:
                     CAST(e + 1023 AS HUGEINT) * 4503599627370496 + CAST((a / pow(2.0, e) - 1) * pow(2.0, 52) AS HUGEINT))[1] END)[1]
        END""",
    "spark_float_bits": """(f) AS CASE
        WHEN f = 0 THEN 0::HUGEINT WHEN isnan(f) THEN 2143289344::HUGEINT
        WHEN isinf(f) THEN CASE WHEN f > 0 THEN 2139095040::HUGEINT ELSE 4286578688::HUGEINT END
        ELSE CASE WHEN f < 0 THEN 2147483648::HUGEINT ELSE 0::HUGEINT END
             + list_transform([abs(CAST(f AS DOUBLE))], lambda a: CASE WHEN a < 1.1754943508222875e-38
                 THEN CAST(a * pow(2.0, 126) * pow(2.0, 23) AS HUGEINT)
                 ELSE list_transform([spark_exponent2(a)], lambda e:
                     CAST(e + 127 AS HUGEINT) * 8388608 + CAST((a / pow(2.0, e) - 1) * pow(2.0, 23) AS HUGEINT))[1] END)[1]
        END""",
    # a decimal of up to 18 digits as its unscaled long (DuckDB writes every digit of its scale)
    "spark_hash_unscaled": """(x) AS CASE WHEN CAST(regexp_extract(typeof(x), '\\((\\d+),', 1) AS INTEGER) > 18
        THEN error('hash: a decimal of more than 18 digits is not supported') ELSE CAST(replace(CAST(x AS VARCHAR), '.', '') AS HUGEINT) END""",
}

# Murmur3_x86_32 in 128-bit integers kept below 2^32
_MURMUR3 = {
    "spark_m3_rotl": f"(x, r) AS ((x << r) | (x >> (32 - r))) % {_M32}",
    "spark_m3_mix_k1": f"(k) AS (spark_m3_rotl((CAST(k AS HUGEINT) * 3432918353) % {_M32}, 15) * 461845907) % {_M32}",
    "spark_m3_mix_h1": f"(h, k1) AS (spark_m3_rotl(xor(CAST(h AS HUGEINT), k1), 13) * 5 + 3864292196) % {_M32}",
    "spark_m3_fmix": f"""(h, n) AS list_transform([xor(CAST(h AS HUGEINT), n)], lambda v0: list_transform([xor(v0, v0 >> 16) * 2246822507 % {_M32}],
        lambda v1: list_transform([xor(v1, v1 >> 13) * 3266489909 % {_M32}], lambda v2: xor(v2, v2 >> 16))[1])[1])[1]""",
    # words of 4 bytes (little-endian), then each remaining byte as a signed int (Spark's tail)
    "spark_m3_words": """(hx) AS list_concat(
        list_transform(range(length(hx) // 8), lambda i: ('0x' || substr(hx, 8 * i + 7, 2) || substr(hx, 8 * i + 5, 2)
                                                          || substr(hx, 8 * i + 3, 2) || substr(hx, 8 * i + 1, 2))::HUGEINT),
        list_transform(range(length(hx) // 8 * 4, length(hx) // 2), lambda j: ('0x' || substr(hx, 2 * j + 1, 2))::HUGEINT
                                                                             + CASE WHEN substr(hx, 2 * j + 1, 1) >= '8' THEN 4294967040 ELSE 0 END))""",
    "spark_m3_bytes": """(hx, seed) AS spark_m3_fmix(list_reduce(spark_m3_words(hx), lambda acc, k: spark_m3_mix_h1(acc, spark_m3_mix_k1(k)),
        CAST(seed AS HUGEINT)), length(hx) // 2)""",
    "spark_m3_int": f"(v, seed) AS spark_m3_fmix(spark_m3_mix_h1(seed, spark_m3_mix_k1(CAST(v AS HUGEINT) % {_M32} + CASE WHEN v < 0 THEN {_M32} ELSE 0 END)), 4)",
    "spark_m3_long": f"""(v, seed) AS spark_m3_fmix(list_reduce([CAST(v AS HUGEINT) & 4294967295, (CAST(v AS HUGEINT) >> 32) & 4294967295],
        lambda acc, k: spark_m3_mix_h1(acc, spark_m3_mix_k1(k)), CAST(seed AS HUGEINT)), 8)""",
    # one value into the running hash: typed overloads pick Spark's rule for the type
    "spark_int32": "(h) AS CAST(CASE WHEN h >= 2147483648 THEN h - 4294967296 ELSE h END AS INTEGER)",
}

# XXH64 in unsigned 128-bit integers kept below 2^64
_XXHASH64 = {
    # a 64-bit rotation as x * 2^r modulo 2^64 - 1 (the bits shifted out come back in), which names x
    # once and so keeps the nested macros small; it gives 0 for all ones (2^64 - 1), where a rotation
    # gives all ones: a 2^-64 chance per step, accepted for the binding time it saves
    "spark_xx_rotl": "(x, r) AS (x * (1::UHUGEINT << CAST(r AS UHUGEINT))) % 18446744073709551615::UHUGEINT",
    "spark_xx_round": f"(acc, lane) AS (spark_xx_rotl((acc + lane * {_u(_P2)}) % {_M64}, 31) * {_u(_P1)}) % {_M64}",
    "spark_xx_merge": f"(h, v) AS ((xor(h, spark_xx_round(0::UHUGEINT, v)) * {_u(_P1)}) + {_u(_P4)}) % {_M64}",
    "spark_xx_fmix": f"""(h) AS list_transform([CAST(h AS UHUGEINT)], lambda v0: list_transform([xor(v0, v0 >> 33::UHUGEINT) * {_u(_P2)} % {_M64}],
        lambda v1: list_transform([xor(v1, v1 >> 29::UHUGEINT) * {_u(_P3)} % {_M64}], lambda v2: xor(v2, v2 >> 32::UHUGEINT))[1])[1])[1]""",
    # little-endian words of 8 and 4 bytes from their hex digits
    "spark_xx_le8": """(c) AS ('0x' || substr(c, 15, 2) || substr(c, 13, 2) || substr(c, 11, 2) || substr(c, 9, 2)
                                  || substr(c, 7, 2) || substr(c, 5, 2) || substr(c, 3, 2) || substr(c, 1, 2))::UHUGEINT""",
    "spark_xx_le4": "(c) AS ('0x' || substr(c, 7, 2) || substr(c, 5, 2) || substr(c, 3, 2) || substr(c, 1, 2))::UHUGEINT",
    "spark_xx_lanes": "(hx) AS list_transform(range(length(hx) // 16), lambda i: spark_xx_le8(substr(hx, 16 * i + 1, 16)))",
    "spark_xx_stripes": f"""(lanes, seed) AS list_transform([list_reduce(range(len(lanes) // 4), lambda v, i: {{
            'v1': spark_xx_round(v.v1, lanes[4 * i + 1]), 'v2': spark_xx_round(v.v2, lanes[4 * i + 2]),
            'v3': spark_xx_round(v.v3, lanes[4 * i + 3]), 'v4': spark_xx_round(v.v4, lanes[4 * i + 4])}},
        {{'v1': (seed + {_u(_P1 + _P2)}) % {_M64}, 'v2': (seed + {_u(_P2)}) % {_M64}, 'v3': seed,
          'v4': (seed + {_u(2**64 - _P1)}) % {_M64}}})], lambda v:
        spark_xx_merge(spark_xx_merge(spark_xx_merge(spark_xx_merge(
            (spark_xx_rotl(v.v1, 1) + spark_xx_rotl(v.v2, 7) + spark_xx_rotl(v.v3, 12) + spark_xx_rotl(v.v4, 18)) % {_M64},
            v.v1), v.v2), v.v3), v.v4))[1]""",
    # the 8-byte lanes after the 32-byte stripes, into the hash of the stripes (or of the seed)
    "spark_xx_words": f"""(lanes, seed, n) AS list_reduce(list_slice(lanes, len(lanes) // 4 * 4 + 1, len(lanes)),
        lambda h, lane: (spark_xx_rotl(xor(h, spark_xx_round(0::UHUGEINT, lane)), 27) * {_u(_P1)} + {_u(_P4)}) % {_M64},
        (CASE WHEN n >= 32 THEN spark_xx_stripes(lanes, CAST(seed AS UHUGEINT)) ELSE (CAST(seed AS UHUGEINT) + {_u(_P5)}) % {_M64} END
         + CAST(n AS UHUGEINT)) % {_M64})""",
    "spark_xx_bytes": f"""(hx, seed) AS spark_xx_fmix(list_transform([spark_xx_words(spark_xx_lanes(hx), seed, length(hx) // 2)], lambda h:
        list_reduce(list_transform(range(length(hx) // 16 * 8 + CASE WHEN length(hx) % 16 >= 8 THEN 4 ELSE 0 END, length(hx) // 2),
                                   lambda j: ('0x' || substr(hx, 2 * j + 1, 2))::UHUGEINT),
            lambda acc, b: (spark_xx_rotl(xor(acc, (b * {_u(_P5)}) % {_M64}), 11) * {_u(_P1)}) % {_M64},
            CASE WHEN length(hx) % 16 >= 8
                 THEN (spark_xx_rotl(xor(h, (spark_xx_le4(substr(hx, length(hx) // 16 * 16 + 1, 8)) * {_u(_P1)}) % {_M64}), 23)
                       * {_u(_P2)} + {_u(_P3)}) % {_M64}
                 ELSE h END))[1])""",
    "spark_xx_int": f"""(v, seed) AS spark_xx_fmix((spark_xx_rotl(xor((CAST(seed AS UHUGEINT) + {_u(_P5 + 4)}) % {_M64},
        ((CAST(v AS HUGEINT) & 4294967295)::UHUGEINT * {_u(_P1)}) % {_M64}), 23) * {_u(_P2)} + {_u(_P3)}) % {_M64})""",
    "spark_xx_long": f"""(v, seed) AS spark_xx_fmix((spark_xx_rotl(xor((CAST(seed AS UHUGEINT) + {_u(_P5 + 8)}) % {_M64},
        spark_xx_round(0::UHUGEINT, (CAST(v AS HUGEINT) & 18446744073709551615)::UHUGEINT)), 27) * {_u(_P1)} + {_u(_P4)}) % {_M64})""",
    "spark_int64": "(h) AS CAST(CAST(h AS HUGEINT) - CASE WHEN h >= 9223372036854775808 THEN 18446744073709551616 ELSE 0 END AS BIGINT)",
}
def _over_items(prefix: str) -> str:
    """``<prefix>_items(items, seed)``: the items of ``spark_hash_items`` into the running hash."""
    return f"""(items, seed) AS list_reduce(items, lambda acc, it: CASE WHEN it.k IS NULL THEN acc
        WHEN it.k = 'int' THEN {prefix}_int(it.n, acc) WHEN it.k = 'long' THEN {prefix}_long(it.n, acc)
        ELSE {prefix}_bytes(it.h, acc) END, seed)"""


MACROS: dict[str, str] = hygienic({
    **_BITS, **_MURMUR3, **_XXHASH64,
    # what Spark hashes of a value, by its type: an int (byte, short, int, date, boolean), a long
    # (bigint, timestamp, a double's bits, a decimal's unscaled value) or bytes (string, binary); an
    # array is its elements in turn. Small typed overloads; the hashing itself is one untyped macro
    # per algorithm (a typed macro is bound whenever a connection defines it)
    "spark_hash_item": "(k, x, n) AS {'k': CASE WHEN x IS NULL THEN NULL ELSE k END, 'n': CAST(n AS HUGEINT), 'h': NULL::VARCHAR}",
    "spark_hash_bytes": "(x, hx) AS {'k': CASE WHEN x IS NULL THEN NULL ELSE 'bytes' END, 'n': NULL::HUGEINT, 'h': hx}",
    "spark_hash_number": """(x) AS CASE
        WHEN typeof(x) = 'DOUBLE' THEN spark_hash_item('long', x, spark_double_bits(CAST(x AS DOUBLE)))
        WHEN typeof(x) = 'FLOAT' THEN spark_hash_item('int', x, spark_float_bits(CAST(x AS FLOAT)))
        WHEN typeof(x) LIKE 'DECIMAL%' THEN spark_hash_item('long', x, spark_hash_unscaled(x))
        ELSE CAST(error('hash: a value of type ' || typeof(x) || ' cannot be hashed here') AS STRUCT(k VARCHAR, n HUGEINT, h VARCHAR)) END""",
    "spark_hash_items": """(x INTEGER) AS [spark_hash_item('int', x, x)], (x BIGINT) AS [spark_hash_item('long', x, x)],
        (x BOOLEAN) AS [spark_hash_item('int', x, CASE WHEN x THEN 1 ELSE 0 END)],
        (x DATE) AS [spark_hash_item('int', x, x - DATE '1970-01-01')], (x TIMESTAMP) AS [spark_hash_item('long', x, epoch_us(x))],
        (x TIMESTAMPTZ) AS [spark_hash_item('long', x, epoch_us(x))],
        (x VARCHAR) AS [spark_hash_bytes(x, hex(x))], (x BLOB) AS [spark_hash_bytes(x, hex(x))],
        (x INTEGER[]) AS list_transform(x, lambda e: spark_hash_item('int', e, e)),
        (x BIGINT[]) AS list_transform(x, lambda e: spark_hash_item('long', e, e)),
        (x VARCHAR[]) AS list_transform(x, lambda e: spark_hash_bytes(e, hex(e))),
        (x DOUBLE[]) AS list_transform(x, lambda e: spark_hash_number(e)),
        (x) AS [spark_hash_number(x)]""",
    "spark_m3_items": _over_items("spark_m3"),
    "spark_xx_items": _over_items("spark_xx"),
    # crc32 (java.util.zip.CRC32) of the bytes: the reflected polynomial 0xEDB88320, bit by bit
    "spark_crc32": """(x) AS xor(list_reduce(list_transform([hex(x)], lambda hx: list_transform(range(length(hx) // 2),
            lambda i: ('0x' || substr(hx, 2 * i + 1, 2))::BIGINT))[1],
        lambda c, b: list_reduce(range(8), lambda r, bit: CASE WHEN r & 1 = 1 THEN xor(r >> 1, 3988292384) ELSE r >> 1 END, xor(c, b)),
        4294967295::BIGINT), 4294967295)""",
})


def hashes(tree: exp.Expression) -> None:
    """``hash(...)``, ``xxhash64(...)``, ``crc32``, ``sha2``."""
    for node in list(tree.find_all(exp.Anonymous, exp.SHA2)):
        if isinstance(node, exp.SHA2):
            node.replace(_sha2(node.this, node.args.get("length")))
            continue
        name = node.name.lower()
        if name in ("hash", "xxhash64"):
            running: exp.Expression = exp.Cast(this=number(42), to=exp.DataType.build("HUGEINT" if name == "hash" else "UHUGEINT",
                                                                                       dialect="duckdb"))
            for value in (v for v in node.expressions if not isinstance(v, exp.Null)):  # NULL leaves the seed
                items = call("spark_hash_items", value)
                running = call("spark_m3_items" if name == "hash" else "spark_xx_items", items, running)
            node.replace(call("spark_int32" if name == "hash" else "spark_int64", running))
        elif name == "crc32" and len(node.expressions) == 1:
            node.replace(call("spark_crc32", node.expressions[0]))


def _sha2(value: exp.Expression, length: exp.Expression | None) -> exp.Expression:
    """``sha2(x, bits)``: 0 and 256 are SHA-256; DuckDB has no SHA-224/384/512; other lengths are NULL."""
    bits = integer_of(length) if length is not None else 256
    if bits in (0, 256):
        return call("sha256", value)
    if bits in (224, 384, 512):
        raise fail("sha2", f"SHA-{bits} is not supported (DuckDB computes SHA-256 only: sha2(x, 256))")
    if bits is None:
        raise fail("sha2", "the bit length must be a literal")
    return exp.Cast(this=exp.Null(), to=exp.DataType.build("VARCHAR"))


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (gated(
    (hashes, (exp.SHA2,), frozenset({"hash", "xxhash64", "crc32"})),
),)

FAMILY = Family("hashes", transforms=TRANSFORMS, macros=MACROS)
