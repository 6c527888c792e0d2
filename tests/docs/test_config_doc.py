"""docs/config.md is the schema's reference: regenerated, it is the same text."""

from pcbench import config_doc


def test_config_reference_is_current():
    assert config_doc.DOC.read_text() == config_doc.render(), "run python -m pcbench.config_doc"


def test_every_schema_key_is_listed_with_a_meaning():
    keys = [cells[0] for cells in config_doc.rows(config_doc.config.RootConfig)]
    assert "`train.steps`" in keys and "`method.lower`" in keys and "`model`" in keys
    assert all(cells[3] for cells in config_doc.rows(config_doc.config.RootConfig)), "a key has no comment"
