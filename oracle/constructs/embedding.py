"""An embedding lookup (`nn.Embedding`, `F.embedding`): rows of a table gathered by integer
indices, a decoder's token embedding or a learned position table. coreai-torch's table keeps
aten.embedding whole and lowers it to a gather_nd of the table by the indices with a trailing axis
(`replace_embedding`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

INDEX_DTYPES = ("int64", "int32")

# ---- the probe --------------------------------------------------------------------------------
# nn.Embedding(num_embeddings, embedding_dim, padding_idx) looked up by indices of input_shape
# and index_dtype. A probe's integer input is int32 (what the runtime feeds); int64 indices, a
# token id's dtype in torch, are that input cast inside the graph, as a model's own ids are.


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Lookup(torch.nn.Module):
        def __init__(self, table: torch.nn.Embedding, index_dtype: torch.dtype) -> None:
            super().__init__()
            self.table = table
            self.index_dtype = index_dtype

        def forward(self, indices: torch.Tensor) -> torch.Tensor:
            return self.table(indices.to(self.index_dtype))

    num, dim = int(params["num_embeddings"]), int(params["embedding_dim"])
    index_dtype = str(params.get("index_dtype", "int64"))
    if index_dtype not in INDEX_DTYPES:
        raise ValueError(f"index_dtype {index_dtype!r} is not one of {', '.join(INDEX_DTYPES)}")
    padding = params.get("padding_idx")
    table = torch.nn.Embedding(num, dim, padding_idx=None if padding is None else int(padding))
    with torch.no_grad():  # trained rows have spread; the padding row stays zero
        table.weight.copy_(torch.randn(num, dim, generator=gen))
        if padding is not None:
            table.weight[int(padding)] = 0.0
    shape = [int(v) for v in params["input_shape"]]
    indices = torch.randint(0, num, shape, generator=gen, dtype=torch.int32)
    if values == "adversarial":  # the table's first and last rows (and its padding row)
        edges = torch.tensor([0, num - 1] + ([int(padding)] if padding is not None else []))
        flat = indices.view(-1)
        flat[: len(edges)] = edges[: flat.numel()].to(indices.dtype)
    return p.Built(
        _Lookup(table, p.DTYPES[index_dtype]), {"indices": indices}, fixed_dtype=("indices",)
    )


# ---- the detector ------------------------------------------------------------------------------
# aten.embedding(weight, indices, padding_idx=-1, ...): the table's size, the indices' shape and
# dtype, the padding row where one is set. The instance's dtype is the table's.


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    weight, indices = node.args[0], node.args[1]
    if not (g.is_tensor(weight) and g.is_tensor(indices)):
        return None
    table, how = sizes.concrete(weight)
    shape, how_i = sizes.concrete(indices)
    if len(table) != 2:
        return None
    index_dtype = g.name(g.val(indices).dtype)
    if index_dtype not in INDEX_DTYPES:
        return None
    padding = g.arg(node, 2, "padding_idx", -1)
    params: dict[str, Any] = {
        "num_embeddings": table[0],
        "embedding_dim": table[1],
        "input_shape": shape,
        "index_dtype": index_dtype,
    }
    if isinstance(padding, int) and padding >= 0:
        params["padding_idx"] = padding
    dtype = g.probe_dtype(g.val(weight).dtype, params)
    return g.Found(
        "embedding", g.with_sizes(params, g.worst((how, how_i))), dtype, g.module_path(node)
    )


def label(params: dict[str, Any], short: str) -> str:
    """`embedding 1024x64 [1x16 int64] fp16`."""
    return (
        f"embedding {params.get('num_embeddings')}x{params.get('embedding_dim')} "
        f"[{dims(params.get('input_shape'))} {params.get('index_dtype')}] {short}"
    )


CONSTRUCT = Construct(
    kind="embedding",
    params=("num_embeddings", "embedding_dim", "input_shape", "index_dtype", "padding_idx"),
    build=build,
    readers=(Reader(("aten.embedding.default",), detect),),
    scan=ScanSignature(
        unseen="an embedding lowers to a gather_nd a scan does not tell apart from any other gather"
    ),
    label=label,
)
