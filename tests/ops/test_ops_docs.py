"""docs/ops.md is generated from the registry and the front-ends; it must be up to date."""
from tapegrad import docs_ops


def test_ops_md_is_up_to_date():
    assert docs_ops.TARGET.exists(), "docs/ops.md is missing: run python -m tapegrad.docs_ops"
    assert docs_ops.TARGET.read_text() == docs_ops.source(), (
        "docs/ops.md is out of date: run python -m tapegrad.docs_ops")


def test_ops_md_lists_every_registry_op_and_front_end():
    from tapegrad import ops, registry
    text = docs_ops.source()
    for op in registry.OPS:
        if op.kind != registry.K_LEAF:
            assert f"`{op.name}`" in text
    for name in ops.__all__:
        assert f"| `{name}(" in text
