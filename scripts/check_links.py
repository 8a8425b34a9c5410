"""Check the internal links of a built HTML site: every ``href`` and ``src`` that points inside
the site must name an existing file, and its ``#fragment`` an element id of that file.

    python scripts/check_links.py site [--skip rust]

Links with a scheme (``https:``, ``mailto:``, ...) and protocol-relative ones are not checked.
Prints every broken link with the page it is on, and exits with status 1 if there is one.
"""

from __future__ import annotations

import argparse
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    """The ids and the links of one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and (name == "id" or tag == "a"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link", "area")) or (
                name == "src" and tag in ("img", "script")
            ):
                self.links.append(value)


def _parse(path: Path, cache: dict) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def broken_links(root: Path, skip: list[str]) -> list[str]:
    root = root.resolve()
    cache: dict = {}
    problems = []
    pages = [
        p
        for p in sorted(root.rglob("*.html"))
        if not any(p.relative_to(root).parts[0] == s for s in skip)
    ]
    for page in pages:
        for link in _parse(page, cache).links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//") or (not parts.path and not parts.fragment):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            where = page.relative_to(root)
            if not target.exists():
                problems.append(f"{where}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html" and root in target.parents:
                if not any(s == target.relative_to(root).parts[0] for s in skip) or target == page:
                    if unquote(parts.fragment) not in _parse(target, cache).ids:
                        problems.append(f"{where}: {link} (no element with this id)")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        help="a top-level folder of the site whose pages are not checked (e.g. rust: "
        "rustdoc checks its own links); links into it are checked for the file only",
    )
    args = parser.parse_args(argv)
    problems = broken_links(args.site, args.skip)
    for p in problems:
        print(f"broken link: {p}", file=sys.stderr)
    n_pages = sum(1 for _ in args.site.rglob("*.html"))
    print(
        f"{len(problems)} broken internal links in {n_pages} pages"
        + (f" ({', '.join(args.skip)} skipped)" if args.skip else "")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
