"""The ``milsvm cv --report`` report as one self-contained HTML page (:mod:`milsvm._report`)."""

from __future__ import annotations

from pathlib import Path


def _inline(text):
    """Inline markdown of the report (``code``, **bold**) as HTML, the rest escaped."""
    import html
    import re

    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


_STYLE = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;"
    "margin:2em auto;\n"
    "padding:0 1em;color:#222;line-height:1.45}table{border-collapse:collapse;margin:1em 0;"
    "font-size:0.9em}\n"
    "td,th{border:1px solid #ccc;padding:0.25em 0.6em}th{background:#f2f2f2}"
    "td.num{text-align:right}\n"
    "pre{background:#f6f6f6;padding:0.6em;white-space:pre-wrap;word-break:break-all}"
    "img{max-width:100%;margin:0.5em 0}\n"
    "h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}"
)


def markdown_html(lines, directory):
    """The report's markdown (the subset it writes: headings, fenced code, tables, lists, images,
    paragraphs) as one self-contained HTML page, the PNG figures embedded as base64."""
    import base64
    import html
    import re

    body, k = [], 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("```"):
            end = k + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            body.append("<pre>" + html.escape("\n".join(lines[k + 1 : end])) + "</pre>")
            k = end + 1
            continue
        if line.startswith("|"):
            end = k
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            rows = [[c.strip() for c in row.strip().strip("|").split("|")] for row in lines[k:end]]
            align = [c.endswith(":") for c in rows[1]] if len(rows) > 1 else []
            out = ["<table>"]
            if any(rows[0]):  # the report's key-value table has an empty header row
                out.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in rows[0]) + "</tr>")
            for row in rows[2:]:
                cells = "".join(
                    f'<td class="num">{_inline(c)}</td>'
                    if j < len(align) and align[j]
                    else f"<td>{_inline(c)}</td>"
                    for j, c in enumerate(row)
                )
                out.append(f"<tr>{cells}</tr>")
            body.append("\n".join(out + ["</table>"]))
            k = end
            continue
        if line.startswith("- "):
            end = k
            while end < len(lines) and lines[end].startswith("- "):
                end += 1
            body.append(
                "<ul>" + "".join(f"<li>{_inline(item[2:])}</li>" for item in lines[k:end]) + "</ul>"
            )
            k = end
            continue
        image = re.fullmatch(r"!\[(.*)\]\((.+)\)", line)
        if image:
            data = base64.b64encode((Path(directory) / image.group(2)).read_bytes()).decode("ascii")
            body.append(
                f'<img alt="{html.escape(image.group(1))}" src="data:image/png;base64,{data}">'
            )
        elif line.startswith("## "):
            body.append(f"<h2>{_inline(line[3:])}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{_inline(line[2:])}</h1>")
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
        k += 1
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>milsvm cross-validation report</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
