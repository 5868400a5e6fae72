"""The golden vectors' typed-value notation as Kryo :class:`~reference_runtime.serde.kryo.JavaValue` trees
(a test helper: the runtime never reads this notation)."""

from __future__ import annotations

import base64
from typing import Any

from reference_runtime.serde.kryo import JavaValue


def typed_from_vector(form: Any, labels: dict[str, JavaValue] | None = None) -> JavaValue | None:
    """A :class:`JavaValue` from the vectors' typed-value notation (``{"java": T, "value": V}``; ``label``
    and ``{"java": "ref"}`` mark one shared instance)."""
    labels = {} if labels is None else labels
    if form is None:
        return None
    java, raw = form["java"], form.get("value")
    if java == "ref":
        return labels[form["label"]]
    if java == "bytes":
        node = JavaValue("bytes", base64.b64decode(raw))
    elif java in ("Double", "Float"):
        node = JavaValue(java, float(raw))  # "NaN" and "Infinity" arrive as strings
    elif java == "ArrayList":
        node = JavaValue(java, [])
        if "label" in form:
            labels[form["label"]] = node
        node.value.extend(typed_from_vector(x, labels) for x in raw)
        return node
    elif java in ("HashMap", "LinkedHashMap"):
        node = JavaValue(java, [])
        if "label" in form:
            labels[form["label"]] = node
        node.value.extend((JavaValue("String", k), typed_from_vector(x, labels)) for k, x in raw.items())
        return node
    else:
        node = JavaValue(java, raw)
    if "label" in form:
        labels[form["label"]] = node
    return node
