"""tgemm.TgemmError, the exception tgemm's own entry points raise for input they cannot take.

Defined in Python (not registered from C++): the extension shares pybind11's internals with torch,
so a pybind11 exception translator would apply to torch's bindings too. tgemm/__init__.py hands
the type to the extension (``_C._set_error_type``), whose functions raise it themselves.
"""

from __future__ import annotations


class TgemmError(RuntimeError):
    """Raised for input tgemm cannot take; the message names op, argument, expected and given,
    e.g. ``gemm_a16w16: w.size(1) must equal x.size(-1) (K), got 4095 vs 4096``.

    Raised by the eager calls of ``tgemm.*`` and by the fake kernels (FakeTensorMode, tracing).
    ``torch.ops.tgemm.*`` raise a plain ``RuntimeError`` with the same text; ``except RuntimeError``
    catches both."""


TgemmError.__module__ = "tgemm"

# The start of every message the ops raise for bad input ("<op>: ..."): how the eager calls that
# have to go through torch.ops (a TorchFunctionMode or a tensor subclass's __torch_function__
# takes the call) tell their own errors from the others.
OP_MESSAGE_PREFIXES = tuple(
    f"{op}{suffix}: "
    for op in ("gemm_a16w16", "gemm_bias", "gemm_gelu", "gemm_relu", "gemm_alpha_beta")
    for suffix in ("", "_out")
)


def as_tgemm_error(e: BaseException) -> BaseException:
    """A tgemm op's RuntimeError as TgemmError (same text); any other exception as it is."""
    if type(e) is RuntimeError and str(e).startswith(OP_MESSAGE_PREFIXES):
        return TgemmError(str(e))
    return e
