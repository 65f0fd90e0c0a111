// The labeller's document view: draws the pieces Python sends and reports the mouse selection.
// Offsets: each piece's <span> carries its Python start offset (code points) in data-start; a DOM
// selection counts UTF-16 code units within a text node, so that part is converted to code points
// here. Python checks the reported text against doc.text[start:end] before storing anything.

const codePoints = (s) => { let n = 0; for (const _ of s) n++; return n; };

function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "wb-labeler-text";
  box.tabIndex = 0;
  el.appendChild(box);

  function draw() {
    const spans = model.get("pieces").map(([start, text, style, tip]) => {
      const span = document.createElement("span");
      span.dataset.start = String(start);
      span.textContent = text;
      if (style) span.style.cssText = style;
      if (tip) span.title = tip;
      return span;
    });
    box.replaceChildren(...spans);
    box.dataset.length = String(model.get("length"));
    scroll();
  }

  function scroll() {
    const at = model.get("scroll_to");
    if (at < 0) return;
    const spans = box.children;
    let target = null;
    for (const span of spans) { if (Number(span.dataset.start) <= at) target = span; else break; }
    // centre the piece inside the text box only (the box is positioned): the page itself does not jump
    if (target) box.scrollTop = Math.max(0, target.offsetTop - box.clientHeight / 2);
  }

  // A DOM boundary point (node, offset) inside the box -> a code-point offset into the document.
  function offsetOf(node, offset) {
    if (node.nodeType === Node.TEXT_NODE) {
      const span = node.parentElement.closest("[data-start]");
      return Number(span.dataset.start) + codePoints(node.data.slice(0, offset));
    }
    const span = node.closest ? node.closest("[data-start]") : null;
    if (span && box.contains(span) && span !== box) {  // an element boundary inside one piece
      return Number(span.dataset.start) + (offset === 0 ? 0 : codePoints(span.textContent));
    }
    const kids = box.children;  // a boundary between pieces (offset counts child nodes of the box)
    return offset < kids.length ? Number(kids[offset].dataset.start) : model.get("length");
  }

  let timer = null;
  function report() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    const range = sel.getRangeAt(0);
    if (!range.intersectsNode(box)) return;
    const whole = document.createRange();
    whole.selectNodeContents(box);
    const clipped = range.cloneRange();  // a drag that runs past the box keeps its part inside
    if (clipped.compareBoundaryPoints(Range.START_TO_START, whole) < 0) clipped.setStart(box, 0);
    if (clipped.compareBoundaryPoints(Range.END_TO_END, whole) > 0) clipped.setEnd(box, box.childNodes.length);
    const start = offsetOf(clipped.startContainer, clipped.startOffset);
    const end = offsetOf(clipped.endContainer, clipped.endOffset);
    model.set("selection", { start, end, text: clipped.toString() });
    model.save_changes();
  }
  const later = () => { clearTimeout(timer); timer = setTimeout(report, 120); };

  document.addEventListener("selectionchange", later);
  model.on("change:pieces", draw);
  model.on("change:scroll_to", scroll);
  draw();
  return () => {
    clearTimeout(timer);
    document.removeEventListener("selectionchange", later);
  };
}

export default { render };
