import json
import shutil
import sys
from pathlib import Path

import workbench as wb

out = Path(sys.argv[1]); shutil.rmtree(out, ignore_errors=True)
ds = wb.load_dataset("tests/data/squad_v11_dev")
texts = ["fixed:size=64", "fixed:size=64+bm25", "fixed:size=64+hybrid:rrf_k=30", "fixed:size=64+late",
         "recursive:size=96+header", "semantic:breakpoint_percentile=90,max_size=128", "parent_child"]
vs = [wb.parse_variant(t) for t in texts]
r = wb.sweep(ds, vs, ks=(1, 5), store=out / "cache", progress=False)
r.save(out / "result")
(out / "keys.json").write_text(json.dumps({t: v.key for t, v in zip(texts, vs)}, indent=1))
print(r.config["texts_embedded"], {t: v.key for t, v in zip(texts, vs)})
