"""``cyrbm info``: the build, or a model or DBN file."""
import json

import cyrbm
from cyrbm.cli.options import _num, load_model


def cmd_info(args, out):
    if args["MODEL"] is None:
        info = cyrbm.config()
        from cyrbm.data.datasets import bundled_datasets
        info["bundled_data"] = bundled_datasets()
        if args["--json"]:
            print(json.dumps(info))
        else:
            cyrbm.show_config()
            print("  bundled data:")
            for name, text in info["bundled_data"].items():
                print(f"    {name}: {text}", file=out)
        return 0
    from cyrbm import _io
    path = args["MODEL"]
    arrays = _io.read_npz(path)
    if "layer0_W" in arrays or ("W" not in arrays and any(k.startswith("layer") for k in arrays)):
        from cyrbm.cli.dbn import dbn_info
        return dbn_info(path, arrays, out, args["--json"])
    meta = _io.meta_from_array(arrays["meta"], path) if "meta" in arrays else {}
    model = load_model(path, arrays)
    whitening = getattr(model, "whitening", None)
    training = model.meta.get("training", {})
    history = training.get("history", [])
    info = {
        "model": path, "visible": model.visible,
        "n_visible": model.n_visible, "n_hidden": model.n_hidden,
        "dtype": model.dtype.name, "format_version": meta.get("format_version"),
        "written_by": meta.get("cyrbm_version"),
        "is_checkpoint": "checkpoint" in meta,
        "training": {k: v for k, v in training.items() if k != "history"},
        "last_epoch": history[-1] if history else None,
        **({"whitening": {"kind": whitening.kind, "log_det": whitening.log_det}}
           if whitening is not None else {}),
    }
    if args["--json"]:
        print(json.dumps(info))
        return 0
    print(f"{path}: {model.title} {model.n_visible} visible x {model.n_hidden} hidden, {model.dtype.name}",
          file=out)
    if meta:
        print(f"  format version {meta.get('format_version')}, written by cyrbm "
              f"{meta.get('cyrbm_version')}{' (a training checkpoint)' if info['is_checkpoint'] else ''}",
              file=out)
    else:
        print("  no metadata (weights trained elsewhere)", file=out)
    if whitening is not None:
        print(f"  trained on {whitening.kind}-whitened data (the whitening is in the file; "
              f"ln|det A| = {whitening.log_det:.4f})", file=out)
    settings = training.get("settings")
    if settings:
        k = settings.get("k")
        print(f"  trained by {str(settings.get('method', '?')).upper()}-{k}, "
              f"{training.get('epochs_done')} epochs, batch {settings.get('batch_size')}, "
              f"lr {settings.get('learning_rate')}, seed {settings.get('seed')}"
              + (f", data '{training['data']}'" if training.get("data") else ""), file=out)
    if history:
        last = history[-1]
        if "pseudo_log_likelihood" in last:
            print(f"  last epoch: pseudo-log-likelihood {_num(last['pseudo_log_likelihood'])} "
                  f"nats, reconstruction error {_num(last.get('reconstruction_error'))}", file=out)
    return 0
