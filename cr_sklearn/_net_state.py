"""The state of a fitted skorch net, in one place (private).

A CR model is its module *and* its criterion: the ordinal criterion holds
the learnable cut-points. :func:`snapshot` and :func:`restore` cover both,
and every user of net state goes through them: the finite-step guard's
roll-back, the best-epoch restore of early stopping, pickling and
``save_model``.
"""

import copy

import torch
from skorch.history import History

__all__ = []

#: The parts of a net whose tensors define the fitted model.
MODEL_PARTS = ("module", "criterion")


def _clone(state):
    # Tensor clones: a deepcopy of a state dict costs as much as an epoch of
    # a small net.
    return {
        k: v.detach().clone() if torch.is_tensor(v) else copy.deepcopy(v)
        for k, v in state.items()
    }


def model_state(net):
    """The live state dicts of the net's model parts (not copies)."""
    return {part: getattr(net, part + "_").state_dict() for part in MODEL_PARTS}


def snapshot(net):
    """A copy of the model's tensors (module and criterion)."""
    return {part: _clone(state) for part, state in model_state(net).items()}


def restore(net, state):
    """Load a :func:`snapshot` back into ``net``."""
    for part in MODEL_PARTS:
        getattr(net, part + "_").load_state_dict(state[part])


def is_parametrized(net):
    """Whether the module holds parametrizations (spectral norm) torch cannot pickle."""
    return any(
        torch.nn.utils.parametrize.is_parametrized(m) for m in net.module_.modules()
    )


class NetStateMixin:
    """Pickling of estimators whose ``net_`` torch cannot pickle directly.

    Spectrally normalised modules are parametrized, and torch cannot pickle
    (or deepcopy, or joblib-dump) those: such a net is saved as its state
    (model tensors, optimizer state, history) and rebuilt on load with
    ``_rebuild_net``.
    """

    # Rebuilt from the net on load, never stored.
    _derived_attributes = ("net_", "module_", "_inference_module")

    def __getstate__(self):
        state = super().__getstate__()
        net = state.get("net_")
        if net is not None and is_parametrized(net):
            state = {
                k: v for k, v in state.items() if k not in self._derived_attributes
            }
            state["_net_state"] = {
                **snapshot(net),
                "optimizer": net.optimizer_.state_dict(),
                "history": list(net.history),
            }
        return state

    def __setstate__(self, state):
        state = dict(state)
        saved = state.pop("_net_state", None)
        super().__setstate__(state)
        if saved is not None:
            net = self._rebuild_net()
            restore(net, saved)
            net.optimizer_.load_state_dict(saved["optimizer"])
            net.history = History(saved["history"])
            self._set_net(net)
