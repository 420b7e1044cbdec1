"""Fine-tune a VLM on V-FLUTE with the paper's LoRA recipe on a 4-bit base (QLoRA), then evaluate it.

Examples::

    # the paper's run (3 epochs, r=128, alpha=256, lr 2e-5, cosine, warmup 0.03, effective batch 64)
    python scripts/qlora_vflute.py --model llava-hf/llava-1.5-7b-hf --data path/to/vflute --out runs/vf

    # the hypothesis-only ablation (white images, 10 epochs), evaluated on the test split afterwards
    python scripts/qlora_vflute.py --model llava-hf/llava-1.5-7b-hf --data path/to/vflute --out runs/vf-noimg \\
        --setting hypothesis_only --evaluate

    # an offline smoke run on a tiny random checkpoint and a generated sample
    python scripts/qlora_vflute.py --model tiny:qwen2_5_vl --sample --out /some/dir --max-steps 4 --lr 1e-3

The run resumes from its newest checkpoint when started again with the same settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="hub id, local checkpoint folder, or tiny:FAMILY")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="V-FLUTE folder/file (official JSON/CSV, HF parquet) or the hub id")
    src.add_argument("--sample", action="store_true", help="train on a generated sample (offline demo)")
    p.add_argument("--out", required=True, help="run folder: checkpoints and the final adapter")
    p.add_argument("--setting", default="full", choices=["full", "hypothesis_only"])
    p.add_argument("--train-split", default="train")
    p.add_argument("--eval-split", default=None, help="split for a per-epoch validation loss (e.g. validation)")
    p.add_argument("--test-split", default="test")
    p.add_argument("--limit", type=int, default=None, help="use only the first N training items")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--grad-accum", type=int, default=None)
    p.add_argument("--lr", type=float, default=None, help="LoRA and projector learning rate (paper: 2e-5)")
    p.add_argument("--quantization", default="4bit", choices=["4bit", "8bit", "none"])
    p.add_argument("--no-gradient-checkpointing", action="store_true")
    p.add_argument("--no-resume", action="store_true")
    p.add_argument("--evaluate", action="store_true", help="score the adapter on the test split afterwards")
    p.add_argument("--scorer", default="auto", help="explanation scorer for --evaluate (auto, paper, minilm, none)")
    p.add_argument("--eval-limit", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int, default=256, help="evaluation decoding (paper: 256)")
    p.add_argument("--num-beams", type=int, default=3, help="evaluation decoding (paper: 3)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from vlamb_nb.benchmarks.vflute import finetune as ft
    from vlamb_nb.benchmarks.vflute.benchmark import BENCHMARK
    from vlamb_nb.benchmarks.vflute.finetune_eval import evaluate_adapter
    from vlamb_nb.benchmarks.vflute.finetune_recipe import QLoRAConfig, with_overrides
    from vlamb_nb.meta import format_deviations
    from vlamb_nb.models import DecodingParams

    args = parse_args(argv)
    out = Path(args.out)
    source = BENCHMARK.make_sample(out / "sample", n=8, seed=0) if args.sample else args.data
    train_items = BENCHMARK.load(source, split=args.train_split)
    if args.limit:
        train_items = train_items.head(args.limit)
    eval_items = BENCHMARK.load(source, split=args.eval_split) if args.eval_split else None
    config = with_overrides(
        QLoRAConfig.paper(args.setting), epochs=args.epochs, max_steps=args.max_steps,
        batch_size=args.batch_size, grad_accum=args.grad_accum, learning_rate=args.lr, projector_lr=args.lr,
        gradient_checkpointing=False if args.no_gradient_checkpointing else None)
    config = replace(config, quantization=None if args.quantization == "none" else args.quantization)
    result = ft.train(args.model, train_items, out, config, eval_items=eval_items, resume=not args.no_resume)
    summary = result.summary()
    if args.evaluate:
        test_items = BENCHMARK.load(source, split=args.test_split)
        params = DecodingParams(max_new_tokens=args.max_new_tokens, num_beams=args.num_beams, seed=42)
        scored = evaluate_adapter(result.adapter_dir, test_items, store=out / "predictions.jsonl", scorer=args.scorer,
                                  limit=args.eval_limit, model=result.model, params=params)
        summary["table4"] = BENCHMARK.tables(scored)["Table 4"].reset_index().to_dict(orient="records")
        summary["deviations"] = [d.to_dict() for d in scored.attrs["deviations"]]
    else:
        summary["deviations"] = [d.to_dict() for d in result.deviations]
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
    else:
        print(f"adapter: {summary['adapter_dir']}")
        print(f"steps: {summary['steps']}, loss {summary['first_loss']:.4f} -> {summary['last_loss']:.4f}")
        if "table4" in summary:
            print(summary["table4"])
        print(format_deviations(result.deviations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
