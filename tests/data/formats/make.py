"""Builds handbook.pdf and report.docx of this folder (run once, kept as run; needs reportlab, a test-time tool only):

    PYTHONPATH=/tmp/ingest_tools python tests/data/formats/make.py
"""

from pathlib import Path

import docx
from reportlab.lib.pagesizes import A5
from reportlab.pdfgen import canvas

HERE = Path(__file__).parent
PAGES = [
    ["Refunds are paid back to the original card within five working days.",
     "Before a refund is sent, the billing configu-", "ration of the account is checked by hand."],
    ["Invoices are sent on the first day of each month.", "Every invoice can be downloaded as a PDF."],
    ["Prices include VAT for customers in the European Union.", "Business customers can add a VAT number."],
]


def pdf() -> None:
    c = canvas.Canvas(str(HERE / "handbook.pdf"), pagesize=A5, invariant=1)
    c.setTitle("ACME Billing Handbook")
    width, height = A5
    for n, lines in enumerate(PAGES, 1):
        c.setFont("Helvetica", 9)
        c.drawString(40, height - 30, "ACME Billing Handbook")
        c.drawString(40, 25, f"Page {n} of {len(PAGES)}")
        c.setFont("Helvetica", 11)
        for i, line in enumerate(lines):
            c.drawString(40, height - 80 - 16 * i, line)
        c.showPage()
    c.save()


def word() -> None:
    d = docx.Document()
    d.core_properties.title = "Support Report"
    d.add_heading("Support Report", level=0)
    d.add_paragraph("Tickets fell by a third after the new help pages went live.")
    d.add_heading("Response times", level=1)
    d.add_paragraph("Most tickets were answered within four hours.")
    d.add_heading("By channel", level=2)
    t = d.add_table(rows=3, cols=2)
    for row, cells in zip(t.rows, [("Channel", "Median hours"), ("Email", "3.5"), ("Chat", "0.2")], strict=True):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    d.add_paragraph("Phone support ends in March.", style="List Bullet")
    d.add_paragraph("Chat opens on weekends.", style="List Bullet")
    d.save(HERE / "report.docx")


if __name__ == "__main__":
    pdf()
    word()
