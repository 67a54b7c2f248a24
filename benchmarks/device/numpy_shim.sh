#!/usr/bin/env bash
# numpy_shim.sh DIR — write DIR/sitecustomize.py, which gives every name numba-cuda overloads
# but this numpy lacks (numpy 2.5 on the device image has no np.row_stack, which numba-cuda
# 0.30 overloads at import) a stand-in in every Python process that has DIR on its
# PYTHONPATH. Used by gpu_session.sh and notebook_session.sh (beside it) on the device machine.
set -eu
DIR=${1:?usage: numpy_shim.sh DIR}
mkdir -p "$DIR"
"${PYTHON:-python3}" - <<'EOF' > "$DIR/sitecustomize.py"
import importlib.util, pathlib, re
import numpy as np
names = set()
spec = importlib.util.find_spec("numba_cuda")
if spec is not None and spec.origin:
    for f in pathlib.Path(spec.origin).parent.rglob("*.py"):
        names.update(re.findall(r"(?:overload|infer_global|lower_builtin|lower)\(np\.([a-z_]\w*)",
                                f.read_text(errors="ignore")))
missing = []
for n in sorted(names):
    try:
        getattr(np, n)
    except AttributeError:
        missing.append(n)
print("# numpy stand-ins for names numba-cuda overloads but this numpy lacks (numpy_shim.sh)")
print("import numpy as _np")
print(f"for _n in {missing!r}:")
print("    if not hasattr(_np, _n):")
print("        setattr(_np, _n, _np.vstack if _n == 'row_stack' else (lambda *a, **k: None))")
EOF
