"""``FeatureExtractInPlace`` (``ml/feature/extract_example.md``): anti-spam features of a text column,
as Byzer's SQLFeatureExtractInPlace defines them. ``train T as FeatureExtractInPlace.`TARGET` where
inputCol="content"`` appends: ``phone`` (of the text itself), ``noEmoAndSpec`` (the text without
emoticon images, quoted replies and HTML entities), then of that ``email``, ``qqwechat``, ``url`` (how
often "http" occurs) and ``pic`` (image links); ``cleanedDoc`` (without HTML, URLs, e-mails and image
links), then of that ``blank``, ``chinese``, ``english``, ``number``, ``punctuation`` and
``uninvisible`` as whole percentages of its length, ``mostchar`` (how often its commonest character
occurs) and ``length``. Nothing is learnt: ``register ... as f`` gives ``f`` (phone) and ``f_phone``,
``f_email``, ``f_qqwechat``, ``f_url``, ``f_pic``, ``f_cleanEmotionAndSpec``, ``f_cleanHtml``,
``f_blank``, ``f_chinese``, ``f_english``, ``f_number``, ``f_punctuation``, ``f_mostchar``, ``f_length``,
each of one text. Regular expressions as Byzer's (Java's ASCII ``\\d``/``\\w``, no flags where
Byzer's ``CASE_INSENSITIVE & DOTALL`` gives none); blanks are whitespace (Byzer's class also counts
the letter s and ``|``, a bug); lengths count characters, not UTF-16 units."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable

import pyarrow as pa

from ...errors import MLSQLError
from ...options import Param
from . import fitted
from .base import ET, Call

NAME = "FeatureExtractInPlace"

_PHONE = [re.compile(p, re.ASCII) for p in (
    r"\D[01]\d{2,3}-?\d{8}\D", r"(热线|电话|TEL|来电|短信|手机).{0,3}\d{3,}", r"400-?\d{3}-?\d{3}",
    r"(热线|电话|TEL|来电|手机).{0,3}\d{3,}[- ]?\d{3,}[- ]?\d{3,}", r"\D1\d{2}\s*\D?\s*\d{4}\s*\D?\s*\d{4}",
    r"\D1\d{3}\s*\D?\s*\d{4}\s*\D?\s*\d{3}")]
_EMAIL = re.compile(r"[*a-zA-Z0-9_-]+@[a-zA-Z0-9]+\.[a-zA-Z]+")
_QQ_WECHAT = [re.compile(p, re.ASCII) for p in (
    r"(加|Q|群|加我|扣扣)[^\w]{0,10}\d{5,}", r"(Q|群|加我|扣扣)[^\w]{0,10}(\d[- ]?){5,}", r"(微信|v信|V)[^\w]{0,8}[a-zA-Z0-9]{5,}")]
_URL = re.compile(r"(https?|ftp|file)://[-A-Za-z0-9+&@#/%?=~_|!:,.;]+[-A-Za-z0-9+&@#/%=~_|]")
_PIC = re.compile(r"img.dxycdn.com")
_EMOTION = re.compile(r'<img src="http://assets.dxycdn.com(.*?)/>', re.IGNORECASE)
_QUOTE = re.compile(r'<div class="quote"><blockquote>[\s\S]*?</blockquote>', re.IGNORECASE)
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"), ("&#64;", "@"))
_MARKUP = [re.compile(p, re.IGNORECASE) for p in (r"<script[^>]*?>[\s\S]*?</script>", r"<style[^>]*?>[\s\S]*?</style>",
                                                   r"<[^>]+>")]


def _without_emotions(doc: str) -> str:
    doc = _EMOTION.sub("", doc)
    for entity, char in _ENTITIES:
        doc = doc.replace(entity, char)
    return _QUOTE.sub("", doc)


def _cleaned(doc: str) -> str:
    for markup in _MARKUP:
        doc = markup.sub("", doc)
    doc = re.sub(r"^[\x00- ]+|[\x00- ]+$", "", doc)  # Java's trim
    doc = re.sub(r"<[^>]*>", "", re.sub(r"\r|\n|\t", "", doc)).replace("&nbsp", "")
    for pattern in (_URL, _EMAIL, _PIC):
        doc = pattern.sub("", doc)
    return doc


def _percent(counts: Callable[[str], bool], scale: int = 1) -> Callable[[str], int]:
    return lambda doc: sum(map(counts, doc)) * 100 * scale // len(doc) if doc else 0


_FEATURES: dict[str, tuple[Callable[[str], object], pa.DataType]] = {
    "phone": (lambda doc: any(p.search(doc) for p in _PHONE), pa.bool_()),
    "email": (lambda doc: bool(_EMAIL.search(doc)), pa.bool_()),
    "qqwechat": (lambda doc: any(p.search(doc) for p in _QQ_WECHAT), pa.bool_()),
    "url": (lambda doc: doc.count("http"), pa.int32()),
    "pic": (lambda doc: len(_PIC.findall(doc)), pa.int32()),
    "cleanEmotionAndSpec": (_without_emotions, pa.string()),
    "cleanHtml": (_cleaned, pa.string()),
    "blank": (_percent(str.isspace), pa.int32()),
    "chinese": (_percent(lambda c: "\u4e00" <= c <= "\u9fa5"), pa.int32()),
    "english": (_percent(lambda c: c.isascii() and c.isalpha()), pa.int32()),
    "number": (_percent(lambda c: "0" <= c <= "9"), pa.int32()),
    "punctuation": (_percent(lambda c: unicodedata.category(c).startswith("P")), pa.int32()),
    "uninvisible": (_percent(lambda c: unicodedata.category(c).startswith("C"), scale=2), pa.int32()),
    "mostchar": (lambda doc: max(Counter(doc).values(), default=0), pa.int32()),
    "length": (len, pa.int32()),
}
"""Each feature of one text, by the suffix ``register`` gives its function."""

# train's columns: (column, feature, the column it is computed from; None: the input column)
_COLUMNS = (("phone", "phone", None), ("noEmoAndSpec", "cleanEmotionAndSpec", None),
            ("email", "email", "noEmoAndSpec"), ("qqwechat", "qqwechat", "noEmoAndSpec"), ("url", "url", "noEmoAndSpec"),
            ("pic", "pic", "noEmoAndSpec"), ("cleanedDoc", "cleanHtml", "noEmoAndSpec"),
            *((name, name, "cleanedDoc") for name in ("blank", "chinese", "english", "number", "punctuation",
                                                      "uninvisible", "mostchar", "length")))


def _applier(feature: str) -> fitted.Applier:
    compute, kind = _FEATURES[feature]

    def apply(state: dict, texts: pa.Array) -> pa.Array:
        return pa.array([None if text is None else compute(text) for text in texts.to_pylist()], kind)

    duckdb_type = {pa.bool_(): "BOOLEAN", pa.int32(): "INTEGER", pa.string(): "VARCHAR"}[kind]
    return fitted.Applier(apply, duckdb_type)


def _fit(table: pa.Table, call: Call) -> dict:
    column = call.column("inputCol", table.column_names, NAME) if call.options.get("inputCol") else "doc"  # Byzer's default
    return {"inputCol": column}


def _transform(state: dict, table: pa.Table, table_name: str) -> pa.Table:
    text = fitted.column_of(table, state["inputCol"], table_name, NAME)
    if not (pa.types.is_string(text.type) or pa.types.is_large_string(text.type)):
        raise MLSQLError(f"{NAME}: inputCol {state['inputCol']!r} must be text, not {text.type}")
    for column, feature, source in _COLUMNS:
        values = text if source is None else table.column(source)
        table = fitted.replace_or_append(table, column, _applier(feature).transform(state, values.combine_chunks()))
    return table


LEARNER = fitted.Learner(NAME, _fit, _transform, _applier("phone"),
                         companions={f"_{feature}": _applier(feature) for feature in _FEATURES})

ETS = (
    ET(NAME, "anti-spam features of a text column: phone, e-mail, QQ/WeChat, URLs, images, character shares",
       LEARNER.train, (Param("inputCol", "doc", "the text column"),), kind="feature engineer", learner=LEARNER,
       example="""select '请联系 13634282910' as content union all select '扣扣 527153688@qq.com' as content as texts;
train texts as FeatureExtractInPlace.`db.extract` where inputCol="content" as features;
register FeatureExtractInPlace.`db.extract` as extract;
select extract_qqwechat(content) as qq, extract_length(content) as n from texts as applied;
"""),
)
