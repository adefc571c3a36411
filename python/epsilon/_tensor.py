"""``epsilon.Tensor``: the NumPy arrays Epsilon gives back, shown as a table
by Jupyter."""

import html

import numpy

# Arrays up to this many rows and columns are shown whole as a table;
# larger ones are summarised.
_TABLE_ROWS = 20
_TABLE_COLUMNS = 12


class Tensor(numpy.ndarray):
    """A NumPy array computed by Epsilon.

    It is a NumPy array (a subclass): everything that takes one takes it,
    and operations on it give plain NumPy arrays. Jupyter shows it as a
    table (``_repr_html_``); ``__dlpack__`` hands it to PyTorch or JAX
    without a copy.
    """

    def __array_wrap__(self, array, context=None, return_scalar=False):
        if isinstance(array, Tensor):
            return array  # an `out=` the caller gave: it is what comes back
        array = array.view(numpy.ndarray)
        # NumPy 1.x passes no `return_scalar`: a 0-d result is a scalar.
        return array[()] if return_scalar or array.ndim == 0 else array

    def _repr_html_(self):
        return _html(self.view(numpy.ndarray))


def _cell(value):
    kind = numpy.asarray(value).dtype.kind
    if kind == "c":
        return f"{value.real:.6g}{value.imag:+.6g}j"
    if kind == "f":
        return f"{value:.6g}"
    return html.escape(str(value))


def _html(array):
    head = f"<b>epsilon.Tensor</b> {html.escape(str(array.dtype))}, shape {array.shape}"
    if array.size == 0:
        return f"<div>{head}, empty</div>"
    grid = array.reshape((1,) * (2 - array.ndim) + array.shape) if array.ndim <= 2 else None
    if grid is not None and grid.shape[0] <= _TABLE_ROWS and grid.shape[1] <= _TABLE_COLUMNS:
        body = "".join(
            "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in grid
        )
        return f"<div>{head}<table>{body}</table></div>"
    text = numpy.array2string(array, threshold=200, edgeitems=3)
    summary = ""
    if array.dtype.kind == "f":
        with numpy.errstate(all="ignore"):
            summary = (
                f"<br>min {_cell(numpy.nanmin(array))}, max {_cell(numpy.nanmax(array))}, "
                f"mean {_cell(numpy.nanmean(array))}"
                if not numpy.isnan(array).all()
                else "<br>all NaN"
            )
    return f"<div>{head}{summary}<pre>{html.escape(text)}</pre></div>"
