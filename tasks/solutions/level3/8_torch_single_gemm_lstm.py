"""Honest PyTorch rewrite for level 3, task 8 (one LSTM cell step): one GEMM instead of two.

``nn.LSTMCell`` runs ``x @ W_ih^T + b_ih`` and ``h @ W_hh^T + b_hh`` as two GEMMs, adds them, and
splits the gates (input, forget, cell, output). Here ``[x, h]`` (batch, input + hidden) meets one
stacked weight ``[W_ih, W_hh]`` with the summed bias in a single ``addmm``, whose longer
reduction runs closer to BLAS peak. The stacked weight's rows are also reordered to
(input, forget, output, cell), so one ``sigmoid`` covers three gates and one ``tanh`` the last.

The stacked weight depends only on the parameters, so it is built once and reused while they
are unchanged: the cache key holds each parameter's storage pointer and version counter (an
in-place copy into a parameter, as when weights are loaded, bumps its version), so new weights
always rebuild it. It is derived state, not an output: every call still does all the work.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)
        self._stacked_key: tuple | None = None
        self._stacked: tuple[torch.Tensor, torch.Tensor] | None = None

    def _stacked_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        cell = self.cell
        params = (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
        key = tuple((p.data_ptr(), p._version, p.dtype, p.device) for p in params)
        if key != self._stacked_key or self._stacked is None:
            hidden = cell.hidden_size
            order = [0, 1, 3, 2]  # PyTorch's (i, f, g, o) -> (i, f, o, g)

            def gates(t: torch.Tensor) -> torch.Tensor:
                return torch.cat([t[k * hidden:(k + 1) * hidden] for k in order])

            with torch.no_grad():
                weight = torch.cat([gates(cell.weight_ih), gates(cell.weight_hh)], dim=1)
                bias = gates(cell.bias_ih) + gates(cell.bias_hh)
            self._stacked, self._stacked_key = (weight.t(), bias), key
        return self._stacked

    def forward(self, x: torch.Tensor, h: torch.Tensor,
                c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        weight_t, bias = self._stacked_weights()
        hidden = self.cell.hidden_size
        gates = torch.addmm(bias, torch.cat([x, h], dim=1), weight_t)
        sig = torch.sigmoid(gates[:, :3 * hidden])
        cell_gate = torch.tanh(gates[:, 3 * hidden:])
        i, f, o = sig[:, :hidden], sig[:, hidden:2 * hidden], sig[:, 2 * hidden:]
        c_next = torch.addcmul(f * c, i, cell_gate)
        h_next = o * torch.tanh(c_next)
        return h_next, c_next
