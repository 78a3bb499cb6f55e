"""Readable fitted ``net_`` and ``module_`` rows in the HTML diagram (private)."""

__all__ = []

# reprlib's limit for other objects in scikit-learn's attribute table.
_MAX_CHARS = 30


class _Summary:
    """A value whose repr is ``text``: printed by the attribute table as is."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _first_fitting(*candidates):
    for text in candidates:
        if len(text) <= _MAX_CHARS:
            return text
    return candidates[-1][:_MAX_CHARS]


def net_summary(net):
    """``"80 epochs on cpu"``: the skorch net in one line."""
    epochs = len(net.history)
    device = str(getattr(net, "device", "cpu"))
    return _first_fitting(
        f"{epochs} epoch{'s' * (epochs != 1)} on {device}", f"{epochs} epochs"
    )


def module_summary(module, hidden_sizes=None):
    """``"hidden (16, 16), 625 params"`` or ``"3 members of (16, 16)"``: the module."""
    n_params = sum(p.numel() for p in module.parameters())
    params = f"{n_params:,} params"
    members = getattr(module, "n_members", None)
    if members is not None:
        shape = "" if hidden_sizes is None else f" of {tuple(hidden_sizes)}"
        return _first_fitting(
            f"{members} members{shape}", f"{members} members, {params}"
        )
    if hidden_sizes is None:
        return _first_fitting(params)
    return _first_fitting(f"hidden {tuple(hidden_sizes)}, {params}", params)


class FittedAttributesHTMLMixin:
    """Readable ``net_`` and ``module_`` rows in the estimator's HTML diagram."""

    def _get_fitted_attr_html(self, doc_link=""):
        attrs = super()._get_fitted_attr_html(doc_link)
        net = getattr(self, "net_", None)
        if net is None:
            return attrs
        if "net_" in attrs:
            attrs["net_"] = {
                "type_name": "skorch NeuralNet",
                "value": _Summary(net_summary(net)),
            }
        module = getattr(self, "module_", None)
        if "module_" in attrs and module is not None:
            built = getattr(self, "_built", None) or {}
            attrs["module_"] = {
                "type_name": type(module).__name__,
                "value": _Summary(module_summary(module, built.get("hidden"))),
            }
        return attrs
