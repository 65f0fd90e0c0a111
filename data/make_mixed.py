"""Write data/mixed/questions.jsonl: hand-written questions whose evidence is located in the loaded documents.

Why quotes and not offsets: an offset written by hand is wrong as soon as a reader changes how a file becomes
`doc.text` (a PDF's page joins, HTML turned into Markdown); a quote is found again in the text the loader
gives today, and a quote that is not there exactly once stops the script, naming question and file.
Run from the repo root: `python data/make_mixed.py`.
"""

import json
import sys
from pathlib import Path

from workbench.dataset import Document
from workbench.ingest import read_folder
from workbench.core.io import write_text

OUT = Path(__file__).parent / "mixed"


def quote(doc_id: str, text: str) -> tuple[str, str, bool]:
    """Evidence: exactly `text`."""
    return doc_id, text, False


def row(doc_id: str, text: str) -> tuple[str, str, bool]:
    """Evidence: the whole line (a table row) holding `text`."""
    return doc_id, text, True


PY, GO, DEB, THR = "code/pagerange.py", "code/outyet.go", "code/debounce.js", "code/throttle.js"
HTML, PDF = "html/race_detector.html", "pdf/siege_of_vicksburg.pdf"
DOCX, TABLE = "docx/autogen.docx", "table/git_aliases.md"

QUESTIONS = [
    # code: function bodies and the comments beside them
    ("py-single-int", "How does pypdf's PageRange turn a string holding a single integer into a slice?",
     [quote(PY, "        if m.group(2):\n            # Special case: just an int means a range of one page.\n"
                "            start = int(m.group(2))\n            stop = start + 1 if start != -1 else None\n"
                "            self._slice = slice(start, stop)")]),
    ("py-add-gap", "Why can two pypdf PageRanges not always be added together?",
     [quote(PY, '        if _start_key(b[0]) > _stop_key(a[1]):\n            # There is a gap between a and b.\n'
                '            raise ValueError("Can\'t add PageRanges with gap")')]),
    ("py-first-arg", "What does parse_filename_page_ranges do when the first argument is a page range?",
     [quote(PY, 'if not pdf_filename:\n                raise ValueError(\n'
                '                    "The first argument must be a filename, not a page range."\n                )')]),
    ("py-str", "How is a PageRange printed when it covers exactly one page?",
     [quote(PY, "        if s.step is None:\n            if s.start is not None and s.stop == s.start + 1:\n"
                "                return str(s.start)")]),
    ("py-slice-3", "Does PageRange(\"3\") mean the same pages as slice(3)?",
     [quote(PY, 'slice(3) means the first three pages;\n            PageRange("3") means the range of only the '
                'fourth page.')]),
    ("py-int-re", "Which integers does the page range syntax accept, and why is -0 refused?",
     [quote(PY, '_INT_RE = r"(0|-?[1-9]\\d*)"  # A decimal int, don\'t allow "-0".')]),
    ("py-valid", "How does PageRange.valid decide whether an input can initialise a PageRange?",
     [quote(PY, "        return isinstance(input, (slice, PageRange)) or (\n"
                "            isinstance(input, str) and bool(re.match(PAGE_RANGE_RE, input))\n        )")]),
    ("go-istagged", "How does the outyet server find out whether a Go version has been tagged?",
     [quote(GO, "func isTagged(url string) bool {\n\tpollCount.Add(1)\n\tr, err := http.Head(url)")]),
    ("go-poll", "What does the outyet server's poll loop do until the tag exists, and then?",
     [quote(GO, "\tfor !isTagged(s.url) {\n\t\tpollSleep(s.period)\n\t}\n\ts.mu.Lock()\n\ts.yes = true\n"
                "\ts.mu.Unlock()\n\tpollDone()")]),
    ("go-flags", "Which address does outyet listen on by default, and how often does it poll?",
     [quote(GO, 'httpAddr   = flag.String("http", "localhost:8080", "Listen address")\n'
                '\tpollPeriod = flag.Duration("poll", 5*time.Second, "Poll period")')]),
    ("go-expvar", "Which counters does outyet export for monitoring, and where?",
     [quote(GO, "// These are exported via HTTP as a JSON object at /debug/vars.\nvar (\n"
                '\thitCount       = expvar.NewInt("hitCount")\n\tpollCount      = expvar.NewInt("pollCount")\n'
                '\tpollError      = expvar.NewString("pollError")\n'
                '\tpollErrorCount = expvar.NewInt("pollErrorCount")\n)')]),
    ("js-immediate", "When does underscore's debounce call the function at once instead of after the wait?",
     [quote(DEB, "    if (!timeout) {\n      timeout = setTimeout(later, wait);\n"
                 "      if (immediate) result = func.apply(context, args);\n    }")]),
    ("js-cancel", "How is a pending debounced call cancelled in underscore?",
     [quote(DEB, "  debounced.cancel = function() {\n    clearTimeout(timeout);\n"
                 "    timeout = args = context = null;\n  };")]),
    ("js-leading", "How do you stop underscore's throttle from running the function on the leading edge?",
     [quote(THR, "but if you'd like to disable the execution on the leading edge, pass\n// `{leading: false}`."),
      quote(THR, "if (!previous && options.leading === false) previous = _now;")]),
    ("js-remaining", "When does a throttled function run right away rather than being scheduled?",
     [quote(THR, "    if (remaining <= 0 || remaining > wait) {\n      if (timeout) {\n        clearTimeout(timeout);\n"
                 "        timeout = null;\n      }\n      previous = _now;\n"
                 "      result = func.apply(context, args);")]),
    ("js-both-later", "What do both underscore's debounce and throttle do when their `later` timer fires?",
     [quote(DEB, "      timeout = null;\n      if (!immediate) result = func.apply(context, args);"),
      quote(THR, "    timeout = null;\n    result = func.apply(context, args);\n"
                 "    if (!timeout) context = args = null;")]),
    # HTML page
    ("html-enable", "How do you turn on Go's data race detector?",
     [quote(HTML, "To use it, add the `-race` flag to the go command:")]),
    ("html-exitcode", "Which exit status does a Go program use after the race detector found a race?",
     [quote(HTML, "- `exitcode` (default `66`): The exit status to use when\n  exiting after a detected race.")]),
    ("html-overhead", "How much slower and bigger does a program get with race detection?",
     [quote(HTML, "memory\nusage may increase by 5-10x and execution time by 2-20x.")]),
    ("html-loop", "Why does the loop counter example print 55555 instead of 01234?",
     [quote(HTML, "The variable `i` in the function literal is the same variable used by the loop, so\n"
                  "the read in the goroutine races with the loop increment.")]),
    ("html-windows", "What does the race detector need on Windows since Go 1.21?",
     [quote(HTML, "as of Go 1.21, building\na program with `-race` requires a C compiler that\n"
                  "incorporates version 8 or later of the `mingw-w64`\nruntime libraries.")]),
    ("html-exclude", "How can a test be left out when the race detector runs?",
     [quote(HTML, "When you build with `-race` flag, the `go` command defines additional\n"
                  "[build tag](/pkg/go/build/#hdr-Build_Constraints) `race`.")]),
    ("html-mutex", "How do you make a global map that several goroutines use safe?",
     [quote(HTML, "To make the code safe, protect the accesses with a mutex:")]),
    # PDF: six scanned pages with an OCR text layer
    ("pdf-bunks", "What did the soldiers build their bunks from on June 10th?",
     [quote(PDF, "a part of the day has been spent\nin cutting cane and building bunks with it on the side "
                 "of the hill.")]),
    ("pdf-caves", "How were the people of Vicksburg living during the bombardment?",
     [quote(PDF, "We learn from prisoners that the inhabitants are now living in caves dug out of the sides "
                 "of the hills.")]),
    ("pdf-canister", "What is canister shot made of?",
     [quote(PDF, "Cannister shot is a tin cylinder with\niron heads, filled with balls packed\nwith saw-dust.")]),
    ("pdf-siege-guns", "How large were the new siege guns and how were they brought into place?",
     [quote(PDF, "which it took ten yoke of oxen to haul, one at a\ntime, to their places."),
      quote(PDF, "These guns are nine-inch calibre\nand they are. about twelve feet long.")]),
    ("pdf-fort-hill", "How close to Fort Hill was the regiment on June 15th?",
     [quote(PDF, "We are now so close to Fort Hill that a hard tack was tossed\ninto it by one of our boys")]),
    ("pdf-prisoners", "What was the writer's duty on June 17th?",
     [quote(PDF, "I was detailed\nto the charge of a squad of\nmen to guard rebel prisoners\n"
                 "in the corral at Logan's headquarters.")]),
    ("pdf-mortars", "How often did rebel mortars reach the Union camp, and how were they silenced?",
     [quote(PDF, "The rebs have succeeded in planting a mortar, which\nhas sent a few big shells into our quarters."),
      quote(PDF, "Occasionally the rebs plant a mortar in some out of the way\nspot and drop a shell or two into our "
                 "midst; but a few well\ndirected shots from our big guns at the rear soon settle them.")]),
    ("pdf-pay", "How much was a soldier paid a month?",
     [quote(PDF, "the thirteen dollars a month drawn here by the\nhead of it.")]),
    ("pdf-lincoln", "What did the writer expect if Lincoln gave Grant command of the whole army?",
     [quote(PDF, "until Lincoln\ncommissions Grant commander of\nthe whole army.   Should that occur, one grand move "
                 "forward will\nbe made and the Southern confederacy will be crushed forever.")]),
    ("pdf-housekeeping", "Which household skills did the soldiers of the 20th Ohio claim, across two pages?",
     [quote(PDF, "If any young lady at the North needs"),
      quote(PDF, "a good housekeeper, she can easily be accommodated by making\na requisition on the 20th Ohio. "
                 "In fact we can all do patchwork,\nsew on buttons, make beds and sweep")]),
    # Word document
    ("docx-autogen", "What is AutoGen?",
     [quote(DOCX, "AutoGen is an open-source framework that allows developers to build LLM applications via multiple "
                  "agents that can converse with each other to accomplish tasks.")]),
    ("docx-questions", "Which two questions must a multi-agent conversation framework answer?",
     [quote(DOCX, "(1) How can we design individual agents that are capable, reusable, customizable, and effective "
                  "in multi-agent collaboration? (2) How can we develop a straightforward, unified interface that can "
                  "accommodate a wide range of agent conversation patterns?")]),
    ("docx-table-uuid", "Which row of the AutoGen document's table holds a UUID?",
     [row(DOCX, "49e168b7-d2ae-407f-a055-2167576f39a1 |")]),
    # long table: one row each
    ("table-gcb", "Which oh-my-zsh alias creates a new branch and checks it out?", [row(TABLE, "`git checkout -b`")]),
    ("table-gpsup", "Which alias pushes the current branch and sets its upstream on origin?",
     [row(TABLE, "`git push --set-upstream origin $(git_current_branch)` ")]),
    ("table-gpristine", "Which alias resets hard and removes every untracked and ignored file?",
     [row(TABLE, "`git reset --hard && git clean --force -dfx`")]),
    ("table-gcl", "What replaced the deprecated gcl alias?", [row(TABLE, "| New alias: `gcf`")]),
    ("table-gunwipall", "Which function uncommits all recent --wip-- commits?",
     [row(TABLE, "| Uncommit all recent `--wip--` commits")]),
]


def locate(docs: dict[str, Document], qid: str, doc_id: str, text: str, whole_line: bool) -> dict:
    """The answer span of `text` in `doc_id`; exits naming the question when it is not there exactly once."""
    if doc_id not in docs:
        sys.exit(f"{qid}: no document {doc_id!r} in {OUT} (have {sorted(docs)})")
    body = docs[doc_id].text
    n = body.count(text)
    if n != 1:
        sys.exit(f"{qid}: quote found {n} times in {doc_id} (must be exactly once): {text[:80]!r}")
    start = body.index(text)
    end = start + len(text)
    if whole_line:
        start, stop = body.rfind("\n", 0, start) + 1, body.find("\n", end)
        end = len(body) if stop < 0 else stop
    return {"doc_id": doc_id, "start": start, "end": end}


def main() -> None:
    loaded, skips = read_folder(OUT, {(OUT / "questions.jsonl").absolute()})
    if skips:
        sys.exit(f"{OUT}: files the loader left out: {skips}")
    docs = {x.doc.doc_id: x.doc for x in loaded}
    rows = [{"qid": qid, "question": q, "answers": [locate(docs, qid, *a) for a in answers]}
            for qid, q, answers in QUESTIONS]
    write_text(OUT / "questions.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(docs)} documents, {len(rows)} questions -> {OUT / 'questions.jsonl'}")


main()
