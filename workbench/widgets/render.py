"""Fast redraws of one figure with one variant highlighted: the scrub of the sweeper (and the
explorer's fast PNG).

A full Agg draw of the overview and its PNG at zlib level 6 take a good part of a second, too slow
for a slider (bench/widgets.md). A Picture draws its figure once, keeps the pixels, and per highlight only pastes them
back, draws the few artists of `plots.mark` over them and encodes at zlib level 1; the bytes are
cached per highlight, so going back to a variant costs a dictionary lookup. A new base (the
sweeper's variants, k or axes changed) still costs a build and a full draw.
"""

from __future__ import annotations

import io
from collections import OrderedDict

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from workbench.figures import plots


class Picture:
    """One figure drawn once; `png(key)` is that picture with the variant `key` marked."""

    def __init__(self, fig: Figure, dpi: float = 100, cache_size: int = 64, compress_level: int = 1) -> None:
        fig.set_dpi(dpi)
        self.fig = fig
        self.canvas = FigureCanvasAgg(fig)
        self.canvas.draw()
        self._background = self.canvas.copy_from_bbox(fig.bbox)
        self._compress_level = compress_level
        self._cache: OrderedDict[str | None, bytes] = OrderedDict()
        self._cache_size = cache_size

    def png(self, highlight: str | None = None) -> bytes:
        """PNG bytes of the figure with the variant `highlight` (a key) marked; None marks nothing.
        A key the figure does not show gives the unmarked picture."""
        if highlight in self._cache:
            self._cache.move_to_end(highlight)
            return self._cache[highlight]
        self.canvas.restore_region(self._background)
        artists = [] if highlight is None else plots.mark(self.fig, highlight)
        try:
            for a in artists:
                self.fig.draw_artist(a)
            data = self._encode()
        finally:
            for a in artists:
                a.remove()
        self._cache[highlight] = data
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return data

    def rgba(self) -> Image.Image:
        """The canvas as it is now (after the last `png`), as an image."""
        width, height = self.canvas.get_width_height(physical=True)
        return Image.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)

    def _encode(self) -> bytes:
        buf = io.BytesIO()
        # RGB: the figures are opaque, and 3 bytes a pixel encode faster and smaller than 4
        self.rgba().convert("RGB").save(buf, format="PNG", compress_level=self._compress_level)
        return buf.getvalue()
