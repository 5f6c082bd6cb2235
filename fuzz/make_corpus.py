#!/usr/bin/env python3
# Writes the seed corpora fuzz/corpus/<target>/ (valid examples and edge cases, each a few KB at
# most) for the libFuzzer targets in fuzz/. Run by hand after changing it: python3 fuzz/make_corpus.py
import json
import os
import shutil
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    assert len(data) < 20000, (target, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def config():
    put("config", "train_char", """# a small character-level run
out_dir = 'out-char'
eval_interval = 250  # often
eval_iters = 200
log_interval = 10
always_save_checkpoint = False
dataset = 'shakespeare_char'
gradient_accumulation_steps = 1
batch_size = 64
block_size = 256
n_layer = 6
n_head = 6
n_embd = 384
dropout = 0.2
learning_rate = 1e-3
max_iters = 5000
lr_decay_iters = max_iters
min_lr = learning_rate / 10
beta2 = 0.99
warmup_iters = 100
""")
    put("config", "arithmetic", "batch_size = 4 * 2\nmax_iters = 600_000 // 3\n"
        "gradient_accumulation_steps = 5 * 8\nweight_decay = 1e-1\nbeta1 = .9\n"
        "n_embd = (64 + 0x40) * 2 ** 1\nlearning_rate = -6e-4 * -1\nseed = 7 % 3 - -1\n")
    put("config", "strings", "init_from = \"resume\"\nout_dir = 'a' + \"b\" + 'c\\'d'\n"
        "wandb_run_name = 'gpt2-124M' # c\ndevice = 'cpu'\ncompile = True\ndtype = 'float32'\n"
        "gelu = 'exact'\nbias = True\n")
    put("config", "prepare", "tokenizer = 'gpt2'\ninput = 'a.txt,b.jsonl,dir/'\nout_dir = 'data/x'\n"
        "val_fraction = 0.05\nformat = 'llmc'\nthreads = 2\nstrip_pos_tags = False\n")
    put("config", "sample", "start = 'ROMEO:'\nnum_samples = 3\nmax_new_tokens = 100\n"
        "temperature = 0.8\ntop_k = 200\ntop_p = 0.95\nkv_cache = True\n")
    put("config", "overrides", "init_from=resume\nmax_iters=4000\nlearning_rate=3e-4\n"
        "decay_lr=False\nsampling=sequential\ndata_mode=mmap\n")
    put("config", "edge_cases", "x = ((((1))))\ny = 9223372036854775807\nz = 2 ** 62\n"
        "w = 1e308 * 10\nv = 7 // -2\nu = -7 % 3\nt = 'unterminated\nbatch_size = 'str'\n"
        "n_layer = 1.5\nnot a line\na == b\n")


def token_file():
    raw = struct.pack("<8H", 1, 2, 3, 4, 5, 6, 7, 8)
    put("token_file", "raw_preload", b"\x00" + raw)
    put("token_file", "raw_mmap_vocab65", b"\x09" + raw)  # mmap, auto, vocab 65
    put("token_file", "raw_text", b"\x00" + struct.pack("<32H", *range(10, 42)))

    def shard(n, tokens, version=1, magic=20240520):
        header = struct.pack("<3i", magic, version, n) + bytes(1024 - 12)
        return header + struct.pack("<%dH" % len(tokens), *tokens)

    put("token_file", "llmc_shard", b"\x00" + shard(10, list(range(10))))
    put("token_file", "llmc_shard_forced", b"\x04" + shard(6, [50256, 1, 2, 3, 4, 50256]))
    put("token_file", "llmc_sequential", b"\x80" + shard(20, list(range(20))))
    put("token_file", "llmc_huge_count", b"\x00" + shard(2**31 - 1, [1, 2, 3]))
    put("token_file", "llmc_negative_count", b"\x00" + shard(-4, [1, 2]))
    put("token_file", "llmc_bad_version", b"\x00" + shard(2, [1, 2], version=2))
    put("token_file", "llm_model_magic", b"\x00" + shard(2, [1, 2], magic=20240326))
    put("token_file", "odd_bytes", b"\x00" + raw + b"\x01")
    put("token_file", "beyond_vocab", b"\x18" + struct.pack("<4H", 1, 300, 2, 65535))


def safetensors():
    def st(tensors, metadata=None, pad=True):
        header, blobs, off = {}, b"", 0
        if metadata is not None:
            header["__metadata__"] = metadata
        for name, (dtype, shape, blob) in tensors.items():
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
            blobs += blob
            off += len(blob)
        text = json.dumps(header).encode()
        if pad:
            text += b" " * ((8 - len(text) % 8) % 8)
        return struct.pack("<Q", len(text)) + text + blobs

    f32 = lambda *v: struct.pack("<%df" % len(v), *v)
    put("safetensors", "small", st({"a": ("F32", [2, 3], f32(1, 2, 3, 4, 5, 6)),
                                     "b": ("BF16", [2], b"\x80\x3f\x00\x40"),
                                     "c": ("F16", [1, 2], b"\x00\x3c\x00\xc0"),
                                     "d": ("I64", [1], struct.pack("<q", 7)),
                                     "e": ("F32", [0, 4], b"")}, {"format": "pt"}))
    put("safetensors", "empty_header", struct.pack("<Q", 2) + b"{}")
    put("safetensors", "metadata_only", st({}, {"producer": "nanogpt.cpp", "format": "pt"}))
    # A GPT-2-shaped file (n_embd 64) with too few tensors: the shape inference runs, loading fails.
    put("safetensors", "gpt2_partial", st({
        "wte.weight": ("F16", [3, 64], bytes(3 * 64 * 2)),
        "wpe.weight": ("F16", [2, 64], bytes(2 * 64 * 2)),
        "h.0.ln_1.weight": ("F16", [64], bytes(128)),
        "h.0.ln_1.bias": ("F16", [64], bytes(128)),
        "ln_f.weight": ("F16", [64], bytes(128)),
        "ln_f.bias": ("F16", [64], bytes(128))}, {"format": "pt"}))
    put("safetensors", "transformer_prefix", st({
        "transformer.wte.weight": ("BF16", [2, 64], bytes(256)),
        "transformer.wpe.weight": ("BF16", [1, 64], bytes(128))}))
    put("safetensors", "huge_tensor_1tb", st({"w": ("F32", [262144, 1048576], b"")}))
    put("safetensors", "huge_shape_overflow", st({"w": ("F32", [4611686018427387904, 4], b"")}))
    put("safetensors", "huge_header_len", struct.pack("<Q", 2**63) + b"{}")
    put("safetensors", "offsets_past_end", st({"w": ("F32", [1], f32(1))})[:-2])
    put("safetensors", "bad_dtype", st({"w": ("Q4", [1], b"\x00")}))


def llmc_model():
    def model(maxT, V, L, NH, C, Vp, version=3, zero_bias=False, extra=b""):
        h = struct.pack("<8i", 20240326, version, maxT, V, L, NH, C, Vp) + bytes(1024 - 32)
        sizes = [(Vp + maxT) * C]
        layer = [(C, False), (C, True), (3 * C * C, False), (3 * C, True), (C * C, False), (C, True),
                 (C, False), (C, True), (4 * C * C, False), (4 * C, True), (4 * C * C, False),
                 (C, True)]
        body = b""
        value = 0
        def vals(n, bias):
            nonlocal value
            out = []
            for _ in range(n):
                value += 1
                out.append(0.0 if (bias and zero_bias) else (value % 17) / 16.0 - 0.5)
            return out
        body_vals = vals(sizes[0], False)
        for n, bias in layer:
            body_vals += vals(n * L, bias)
        body_vals += vals(C, False) + vals(C, True)
        if version == 3:
            body = struct.pack("<%df" % len(body_vals), *body_vals)
        else:
            body = b"".join(struct.pack("<f", v)[2:] for v in body_vals)
        return h + body + extra

    put("llmc_model", "fp32_tiny", model(2, 3, 1, 1, 4, 4))
    put("llmc_model", "bf16_tiny", model(2, 3, 1, 2, 4, 4, version=5))
    put("llmc_model", "fp32_no_bias", model(3, 5, 2, 2, 4, 8, zero_bias=True))
    put("llmc_model", "truncated", model(2, 3, 1, 1, 4, 4)[:-4])
    put("llmc_model", "extra_bytes", model(2, 3, 1, 1, 4, 4, extra=b"\x00" * 4))
    put("llmc_model", "huge_layers", struct.pack("<8i", 20240326, 3, 1024, 50257, 2**31 - 1, 12, 768,
                                                 50304) + bytes(1024 - 32))
    put("llmc_model", "huge_vocab", struct.pack("<8i", 20240326, 3, 1024, 2**31 - 1, 12, 12, 768,
                                                2**31 - 1) + bytes(1024 - 32))
    put("llmc_model", "huge_embd", struct.pack("<8i", 20240326, 5, 1, 1, 1, 1, 2**31 - 1, 1) +
        bytes(1024 - 32))
    put("llmc_model", "bad_version", struct.pack("<8i", 20240326, 4, 2, 3, 1, 1, 4, 4) +
        bytes(1024 - 32))
    put("llmc_model", "shard_magic", struct.pack("<3i", 20240520, 1, 0) + bytes(1024 - 12))


def hf_config():
    hf = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
          "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
          "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
          "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
          "resid_pdrop": 0.1, "vocab_size": 50257}
    put("hf_config", "gpt2_124m", json.dumps(hf, indent=2))
    ours = dict(hf, vocab_size=128, nanogpt_model_config={
        "n_layer": 2, "n_head": 2, "n_embd": 16, "block_size": 8, "vocab_size": 70, "bias": False,
        "dropout": 0.1, "gelu": "tanh"})
    put("hf_config", "nanogpt_own", json.dumps(ours, indent=2))
    put("hf_config", "exact_gelu", json.dumps(dict(hf, activation_function="gelu", n_layer=1)))
    put("hf_config", "huge_layers", json.dumps(dict(hf, n_layer=2**31 - 1)))
    put("hf_config", "huge_embd", json.dumps(dict(hf, n_embd=2**30, n_head=1)))
    put("hf_config", "huge_positions", json.dumps(dict(hf, n_positions=2**31 - 1)))
    put("hf_config", "too_big_int", json.dumps(dict(hf, n_layer=2**40)))
    put("hf_config", "wrong_types", '{"n_layer": "12", "n_head": 12.5, "n_embd": null, '
        '"n_positions": [1], "vocab_size": {}, "layer_norm_epsilon": "x"}')
    put("hf_config", "own_wrong_types", json.dumps(dict(hf, nanogpt_model_config={
        "n_layer": 2.5, "n_head": True, "n_embd": "16", "block_size": -1, "vocab_size": 70,
        "bias": 1, "dropout": "0", "gelu": 3})))
    put("hf_config", "not_object", "[1, 2, 3]")


def meta_json():
    chars = ["\n", " ", "!", "a", "b", "é", "中", "😀"]
    meta = {"vocab_size": len(chars), "itos": {str(i): c for i, c in enumerate(chars)},
            "stoi": {c: i for i, c in enumerate(chars)}, "tokenizer": "char"}
    put("meta_json", "char", json.dumps(meta, ensure_ascii=False, indent=1))
    nano = {"vocab_size": 3, "itos": {"0": "a", "1": "b", "2": "c"}, "stoi": {"a": 0, "b": 1, "c": 2}}
    put("meta_json", "nanogpt_meta_pkl", json.dumps(nano))
    put("meta_json", "gpt2_missing_vocab_dir",
        json.dumps({"tokenizer": "gpt2", "vocab_dir": "no/such/dir", "vocab_size": 50257}))
    put("meta_json", "huge_vocab_size", json.dumps(dict(nano, vocab_size=2**62)))
    put("meta_json", "mismatch", json.dumps({"vocab_size": 2, "itos": {"0": "a", "1": "b"},
                                             "stoi": {"a": 1, "b": 0}}))
    put("meta_json", "duplicate", json.dumps({"vocab_size": 2, "itos": {"0": "a", "1": "a"},
                                              "stoi": {"a": 0, "b": 1}}))
    put("meta_json", "two_chars", json.dumps({"vocab_size": 1, "itos": {"0": "ab"},
                                              "stoi": {"ab": 0}}))
    put("meta_json", "unknown_tokenizer", '{"tokenizer": "sentencepiece"}')
    put("meta_json", "truncated", '{"vocab_size": 3, "itos": {"0": "a"')


def checkpoint_state():
    loader = {"rng": ["1", "2", "3", "18446744073709551615"], "shard": 0, "pos": 0, "batches": 12,
              "batch_size": 12, "block_size": 1024, "world_size": 1, "rank": 0}
    state = {"state_version": 1, "iter_num": 120, "best_val_loss": 1.4703, "optimizer": "adamw",
             "optimizer_steps": 120, "train_loader": loader,
             "config": {"out_dir": "out", "batch_size": 12, "learning_rate": 0.0006},
             "data_dir": "/data/shakespeare_char", "tokenizer_meta": {"vocab_size": 65}}
    put("checkpoint_state", "trainer", json.dumps(state, indent=2))
    put("checkpoint_state", "minimal", json.dumps({"state_version": 1, "iter_num": 0,
                                                   "optimizer_steps": 0, "train_loader": loader}))
    put("checkpoint_state", "newer_version", json.dumps(dict(state, state_version=2)))
    put("checkpoint_state", "wrong_types", json.dumps(dict(state, state_version="1", iter_num=1.5,
                                                           best_val_loss="low", optimizer=3)))
    put("checkpoint_state", "bad_rng", json.dumps(dict(state, train_loader=dict(
        loader, rng=["-1", "x", "1e3", "99999999999999999999999"]))))
    put("checkpoint_state", "huge_values", json.dumps(dict(state, iter_num=2**63 - 1,
        train_loader=dict(loader, world_size=2**40, rank=-1, pos=-2**63))))
    put("checkpoint_state", "not_object", "[]")
    # Restorable into the fuzz target's loaders (B = 2, T = 8, 4096 tokens, rank 0 of 1).
    seq = dict(loader, batch_size=2, block_size=8, pos=48, shard=0, batches=3)
    put("checkpoint_state", "sequential_fits", json.dumps(dict(state, train_loader=seq)))
    put("checkpoint_state", "sequential_past_end", json.dumps(dict(state, train_loader=dict(
        seq, pos=4096 - 16))))


def checkpoint_manifest():
    files = {n: {"bytes": b, "crc32c": c} for n, b, c in [
        ("model.safetensors", 3240, "1a2b3c4d"), ("config.json", 812, "00000000"),
        ("optimizer.safetensors", 6480, "ffffffff"), ("state.json", 1034, "deadbeef")]}
    m = {"format": "nanogpt.cpp checkpoint", "format_version": 1, "files": files}
    put("checkpoint_manifest", "valid", json.dumps(m, indent=2))
    put("checkpoint_manifest", "newer_version", json.dumps(dict(m, format_version=2)))
    put("checkpoint_manifest", "missing_file", json.dumps(dict(m, files={
        k: v for k, v in files.items() if k != "state.json"})))
    put("checkpoint_manifest", "bad_entries", json.dumps(dict(m, files=dict(files, **{
        "state.json": {"bytes": -1, "crc32c": 5}, "../escape": {"bytes": 1, "crc32c": "zz"}}))))
    put("checkpoint_manifest", "wrong_format", json.dumps(dict(m, format=7)))
    put("checkpoint_manifest", "huge_version", json.dumps(dict(m, format_version=2**40 + 1)))


def gpt2():
    # "Hello world" = 15496, 995; <|endoftext|> = 50256; 50257 is the first id out of range.
    put("gpt2_decode", "hello_world", b"\x00" + struct.pack("<2H", 15496, 995))
    put("gpt2_decode", "with_eot", b"\x00" + struct.pack("<4H", 50256, 15496, 995, 50256))
    put("gpt2_decode", "byte_tokens", b"\x00" + struct.pack("<6H", 0, 1, 187, 188, 255, 256))
    put("gpt2_decode", "out_of_range", b"\x00" + struct.pack("<2H", 50257, 65535))
    put("gpt2_decode", "wide_huge", b"\x01" + struct.pack("<2I", 15496, 0xFFFFFFFF))
    put("gpt2_encode", "english", "Hello world! It's a test, isn't it? They'll say 'OK'.\n")
    put("gpt2_encode", "code", "int main() {\n    return x->y[3] * 2;  // done\n}\n\n\t\t\n")
    put("gpt2_encode", "unicode", "café naïve 中文 ٣ ² Ⅻ 😀 e\u0301 \u00a0\u3000\ufeff\u2028x\u0085!")
    put("gpt2_encode", "invalid_utf8", b"ab\xff\xfe \xc3 x\xe4\xb8 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf")
    put("gpt2_encode", "spaces", "   a  \n\n  b \t \r\n   ")
    put("gpt2_encode", "eot_text", "<|endoftext|>The end.<|endoftext|>")
    put("gpt2_encode", "long_word", "x" * 300 + " " + "ab" * 100)


def torch_checkpoint():
    # torch.save's zip archives, pickled by CPython's own Pickler with stand-in torch modules that
    # reproduce torch.save's persistent ids and Tensor.__reduce_ex__ (torch itself is not needed).
    import io
    import pickle
    import sys
    import types
    import zipfile
    from collections import OrderedDict

    saved = {k: sys.modules.get(k) for k in ("torch", "torch._utils")}
    torch, utils = types.ModuleType("torch"), types.ModuleType("torch._utils")
    sys.modules["torch"], sys.modules["torch._utils"] = torch, utils

    def _rebuild_tensor_v2(*args):
        pass

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    sizes = {}
    for name, size in (("FloatStorage", 4), ("BFloat16Storage", 2), ("HalfStorage", 2),
                       ("LongStorage", 8)):
        cls = type(name, (), {"__module__": "torch"})
        setattr(torch, name, cls)
        sizes[cls] = size

    class Storage:
        def __init__(self, key, cls, data):
            self.key, self.cls, self.data = key, cls, data

    class Tensor:
        def __init__(self, storage, offset, shape, stride):
            self.args = (storage, offset, tuple(shape), tuple(stride), False, OrderedDict())

        def __reduce_ex__(self, proto):
            return (_rebuild_tensor_v2, self.args)

    def save(obj, storages, protocol=2, top="archive", compress=False):
        pkl = io.BytesIO()

        class Pickler(pickle.Pickler):
            def persistent_id(self, o):
                if isinstance(o, Storage):
                    return ("storage", o.cls, o.key, "cpu", len(o.data) // sizes[o.cls])
                return None

        Pickler(pkl, protocol=protocol).dump(obj)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
            z.writestr(top + "/data.pkl", pkl.getvalue(),
                       zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED)
            z.writestr(top + "/byteorder", "little")
            for st in storages:
                z.writestr(top + "/data/" + st.key, st.data)
            z.writestr(top + "/version", "3\n")
        return out.getvalue()

    try:
        f32 = lambda *v: struct.pack("<%df" % len(v), *v)
        s0 = Storage("0", torch.FloatStorage, f32(1.5, -2, 3.25, 4, -5.5, 6))
        s1 = Storage("1", torch.BFloat16Storage, struct.pack("<4H", 0x3F80, 0x3F00, 0xBE80, 0x4040))
        s2 = Storage("2", torch.FloatStorage, f32(42))
        s3 = Storage("3", torch.HalfStorage, struct.pack("<2H", 0x3C00, 0xC000))
        s4 = Storage("4", torch.LongStorage, struct.pack("<2q", 7, -3))
        model = OrderedDict()
        model["_orig_mod.transformer.wte.weight"] = Tensor(s0, 0, (3, 2), (2, 1))
        model["_orig_mod.transformer.h.0.ln_1.weight"] = Tensor(s1, 0, (4,), (1,))
        model["_orig_mod.lm_head.weight"] = Tensor(s0, 0, (3, 2), (2, 1))
        model["transposed"] = Tensor(s0, 0, (2, 3), (1, 2))
        model._metadata = OrderedDict([("", {"version": 1}), ("transformer", {"version": 1})])
        ckpt = {
            "model": model,
            "optimizer": {
                "state": {0: {"step": Tensor(s2, 0, (), ()), "exp_avg": Tensor(s0, 2, (2, 2), (2, 1))}},
                "param_groups": [{"lr": 6e-4, "betas": (0.9, 0.95), "eps": 1e-8,
                                  "weight_decay": 0.1, "amsgrad": False, "foreach": None,
                                  "params": [0, 1]}]},
            "model_args": {"n_layer": 1, "n_head": 1, "n_embd": 2, "block_size": 4, "bias": False,
                           "vocab_size": 3, "dropout": 0.0},
            "iter_num": 5000,
            "best_val_loss": Tensor(s2, 0, (), ()),
            "config": {"out_dir": "out", "compile": True, "big": 1 << 40, "neg": -5, "none": None},
            "extra": [Tensor(s3, 0, (2,), (1,)), Tensor(s4, 0, (2,), (1,))],
        }
        storages = [s0, s1, s2, s3, s4]
        put("torch_checkpoint", "nanogpt_like", save(ckpt, storages))
        put("torch_checkpoint", "protocol4", save(ckpt, storages, protocol=4, top="ckpt"))
        put("torch_checkpoint", "compressed_pkl", save(ckpt, storages, compress=True))
        put("torch_checkpoint", "view_past_storage",
            save({"w": Tensor(s0, 5, (2,), (1,))}, [s0]))
        put("torch_checkpoint", "huge_shape", save({"w": Tensor(s0, 0, (10**6, 10**6), (10**6, 1))}, [s0]))
        put("torch_checkpoint", "truncated", save(ckpt, storages)[:700])
        put("torch_checkpoint", "legacy", b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.\x80\x02}q\x00.")
        # A whole nanoGPT checkpoint that io/nanogpt_checkpoint maps (1 layer, 2 wide, vocab 3, no
        # bias): every parameter, lm_head tied to wte, AdamW's state in nanoGPT's two groups.
        shapes = [("wte.weight", (3, 2)), ("wpe.weight", (2, 2)), ("h.0.ln_1.weight", (2,)),
                  ("h.0.attn.c_attn.weight", (6, 2)), ("h.0.attn.c_proj.weight", (2, 2)),
                  ("h.0.ln_2.weight", (2,)), ("h.0.mlp.c_fc.weight", (8, 2)),
                  ("h.0.mlp.c_proj.weight", (2, 8)), ("ln_f.weight", (2,))]
        whole, tensors = [], {}
        def tensor(shape, salt):
            n = 1
            for d in shape:
                n *= d
            st = Storage(str(len(whole)), torch.FloatStorage, f32(*[(i + salt) / 8 for i in range(n)]))
            whole.append(st)
            stride = (shape[1], 1) if len(shape) == 2 else (1,) if shape else ()
            return Tensor(st, 0, shape, stride)
        model = OrderedDict()
        for k, (name, shape) in enumerate(shapes):
            tensors[name] = tensor(shape, k)
            model["transformer." + name] = tensors[name]
        model["lm_head.weight"] = tensors["wte.weight"]
        order = [n for n, sh in shapes if len(sh) == 2] + [n for n, sh in shapes if len(sh) < 2]
        state = {i: {"step": tensor((), 9), "exp_avg": tensor(dict(shapes)[n], i),
                     "exp_avg_sq": tensor(dict(shapes)[n], i + 1)} for i, n in enumerate(order)}
        group = {"lr": 1e-3, "betas": (0.9, 0.95), "eps": 1e-8, "amsgrad": False, "foreach": None}
        full = {"model": model,
                "optimizer": {"state": state, "param_groups": [
                    dict(group, weight_decay=0.1, params=list(range(6))),
                    dict(group, weight_decay=0.0, params=[6, 7, 8])]},
                "model_args": {"n_layer": 1, "n_head": 1, "n_embd": 2, "block_size": 2,
                               "bias": False, "vocab_size": 3, "dropout": 0.0},
                "iter_num": 9, "best_val_loss": 2.5,
                "config": {"dataset": "shakespeare_char", "learning_rate": 1e-3}}
        put("torch_checkpoint", "nanogpt_whole", save(full, whole))
        evil = io.BytesIO()
        with zipfile.ZipFile(evil, "w", zipfile.ZIP_STORED) as z:
            z.writestr("archive/data.pkl", b"cposix\nsystem\n(X\x04\x00\x00\x00trueb.")
        put("torch_checkpoint", "posix_system", evil.getvalue())
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


if __name__ == "__main__":
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    for make in (config, token_file, safetensors, llmc_model, hf_config, meta_json,
                 checkpoint_state, checkpoint_manifest, gpt2, torch_checkpoint):
        make()
