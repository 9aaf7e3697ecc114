"""The docs a newcomer follows stand on their own and say what runs (issue 22)."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
BENCH = (REPO / "benchmarks" / "README.md").read_text()


def test_docs_link_nothing_outside_the_repository():
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "benchmarks" / "README.md"]:
        text = doc.read_text()
        assert "../shared" not in text and "DESIGN.md" not in text, doc
        for target in re.findall(r"\]\(([^)#:]+)\)", text):      # relative Markdown links resolve
            assert (doc.parent / target).exists(), (doc, target)


def test_readme_mentions_examples_and_warmup():
    assert "examples/seeds/" in README and (REPO / "examples" / "seeds").is_dir()
    assert "tapegrad.warmup()" in README


def test_benchmark_guide_uses_the_bench_extra_and_no_private_paths():
    assert 'pip install -e ".[bench]"' in BENCH and "/tmp/" not in BENCH
    assert 'pip install -e ".[bench]"' in README


def test_asv_continuous_recipes_compare_two_different_commits():
    for doc in (README, BENCH):
        recipes = re.findall(r"asv continuous [^\n#]*", doc)
        assert recipes
        for recipe in recipes:
            a, b = recipe.split()[-2:]
            assert a != b and not (a == "main" and b == "HEAD"), recipe  # main HEAD on main: one commit twice


def test_readme_says_how_to_publish_the_history():
    assert "asv publish" in README and "asv preview" in README
