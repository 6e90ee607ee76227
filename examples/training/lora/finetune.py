"""LoRA fine-tuning with peft and transformers' Trainer, resumed by TauGrid.

The model is a small Llama built from a config in code, so nothing is
downloaded; put a real base model in its place
(`AutoModelForCausalLM.from_pretrained(...)`) and the rest is unchanged.
The tokenizer is bytes (ids 0-255), for the same reason.

The Trainer writes `checkpoint-N/` folders into TAU_CHECKPOINT_DIR (the
adapter weights only, a few hundred KiB, with the optimizer, scheduler and
RNG states) and writes `trainer_state.json` last, which is how TauGrid's
`huggingface` layout tells a complete checkpoint from one being written.
On a retry TauGrid sets TAU_RESUME_FROM to the newest complete one and the
Trainer carries on from its global step. The final adapter goes to
TAU_OUTPUT_DIR/adapter.
"""

import argparse
import json
import os
import time

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments

TEXT = ("TauGrid queues jobs under quotas, runs them, keeps their checkpoints and resumes them. " * 64).encode()


class ByteDataset(torch.utils.data.Dataset):
    def __init__(self, block: int = 64):
        self.blocks = [list(TEXT[i:i + block]) for i in range(0, len(TEXT) - block, block // 2)]

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict:
        ids = torch.tensor(self.blocks[i])
        return {"input_ids": ids, "labels": ids.clone()}


class ReportToTauGrid(TrainerCallback):
    """Appends step, total_steps and loss to TAU_METRICS_FILE (progress and ETA in `tau status`)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        path = os.environ.get("TAU_METRICS_FILE")
        if path and logs and "loss" in logs and state.is_world_process_zero:
            with open(path, "a") as f:
                f.write(json.dumps({"step": state.global_step, "total_steps": state.max_steps,
                                    "loss": logs["loss"]}) + "\n")
            print(f"step {state.global_step} loss {logs['loss']:.4f}", flush=True)


class Pace(TrainerCallback):
    """Pauses after each step (for demos and tests that stop a run midway)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def on_step_end(self, args, state, control, **kwargs):
        time.sleep(self.seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--save-every", type=int, default=10)
    parser.add_argument("--step-time", type=float, default=0.0, help="seconds to pause per step (demos, tests)")
    args = parser.parse_args()

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128)
    model = get_peft_model(LlamaForCausalLM(config),
                           LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    print(f"LoRA: {trainable} of {total} parameters train", flush=True)

    training = TrainingArguments(
        output_dir=os.environ.get("TAU_CHECKPOINT_DIR", "checkpoints"),
        max_steps=args.steps, save_steps=args.save_every, logging_steps=1, per_device_train_batch_size=8,
        learning_rate=5e-3, save_total_limit=None, report_to=[], seed=0, disable_tqdm=True,
        use_cpu=not torch.cuda.is_available())
    callbacks = [ReportToTauGrid()] + ([Pace(args.step_time)] if args.step_time else [])
    trainer = Trainer(model=model, args=training, train_dataset=ByteDataset(), callbacks=callbacks)
    resume = os.environ.get("TAU_RESUME_FROM")
    if resume:
        print(f"resuming from {os.path.basename(resume)}", flush=True)
    trainer.train(resume_from_checkpoint=resume)
    print(f"done at global step {trainer.state.global_step}", flush=True)
    model.save_pretrained(os.path.join(os.environ.get("TAU_OUTPUT_DIR", "outputs"), "adapter"))


if __name__ == "__main__":
    main()
