"""``mlsql_ray.masking``: what counts as a secret in echoed text, and what stays readable."""

from __future__ import annotations

import pytest

from mlsql_ray.masking import mask, mask_at, secrets_in


@pytest.mark.parametrize("text, expected", [
    ("jdbc:postgresql://h:5432/db?user=a&password=pw1", "jdbc:postgresql://h:5432/db?user=a&password=***"),
    ("jdbc:postgresql://h/db?pwd=pw1&x=1;passwd=pw2", "jdbc:postgresql://h/db?pwd=***&x=1;passwd=***"),
    ("postgresql://analyst:pw1@h/db", "postgresql://analyst:***@h/db"),
    ("postgresql://analyst:p@ss:w@h:1/db", "postgresql://analyst:***@h:1/db"),  # up to the authority's last @
    ('where password="pw1" and user="u"', 'where password="***" and user="u"'),
    ("where api_key='''pw1''' and x='y'", "where api_key='''***''' and x='y'"),
    ('where secret="a\\"b"', 'where secret="***"'),
    ("set db_token = pw1 where type='text';", "set db_token = *** where type='text';"),
    ("set password=pw1;", "set password=***;"),
    ('!python env "AWS_SECRET_ACCESS_KEY=pw1";', '!python env "AWS_SECRET_ACCESS_KEY=***";'),
    ("cannot connect to x?password=pw1: refused", "cannot connect to x?password=***: refused"),
    # text that is not ASCII: case-insensitive as the rules are (ſ is an s to them, not to str.lower)
    ('where PAſſWORD="pw1" and note="é"', 'where PAſſWORD="***" and note="é"'),
    ("select 'é' as e, * from t where Token='pw1'", "select 'é' as e, * from t where Token='***'"),
])
def test_secrets_are_masked(text, expected):
    assert mask(text) == expected
    assert mask(expected) == expected  # masking what is masked changes nothing


@pytest.mark.parametrize("text", [
    "jdbc:postgresql://127.0.0.1:5432/shop?user=analyst",
    'load csv.`a.csv` where header="true" and delimiter="," as t;',
    "set user = bob; set pw = 1;",  # names that do not say secret
    "select 'password' as word, count(*) from t as counted;",
    "it requires a Ray token we did not send: set RAY_AUTH_MODE=token",  # names a kind, not a secret
    'connect jdbc where auth_type="basic" and key_file="/etc/k.pem" as db;',
])
def test_ordinary_text_stays_as_it_is(text):
    assert mask(text) == text
    assert secrets_in(text) == []


def test_a_column_maps_onto_the_masked_line():
    line = 'load x where password="longsecret" and bad'
    masked, column = mask_at(line, line.index("bad") + 1)
    assert masked[column - 1:].startswith("bad")
    masked, column = mask_at(line, line.index("secret") + 1)  # inside the secret: at its mask
    assert masked[column - 1:].startswith("***")
    assert mask_at(line, 3) == (masked, 3)


def test_secrets_in_lists_what_is_hidden():
    assert secrets_in("postgresql://a:p%40ss@h/db?password=two") == ["p%40ss", "two"]
