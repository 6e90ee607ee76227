"""Writes transformers' Trainer checkpoints the way a job would: a tiny GPT-2
built in code (nothing downloaded), output_dir = the folder given, a
checkpoint every 2 steps. With --resume PATH it carries on from PATH, as a
job does from TAU_RESUME_FROM, and prints the step it resumed at."""
import argparse
import os

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--resume")
a = p.parse_args()

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=16, n_positions=8))


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        ids = torch.tensor([(i + k) % 16 for k in range(8)])
        return {"input_ids": ids, "labels": ids}


class FirstStep(TrainerCallback):
    def on_train_begin(self, args, state, control, **kw):
        print(f"starting at global step {state.global_step}", flush=True)


args = TrainingArguments(output_dir=a.out, max_steps=6 if a.resume else 4, save_steps=2,
                         per_device_train_batch_size=2, report_to=[], use_cpu=True,
                         logging_steps=1000, disable_tqdm=True)
trainer = Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=[FirstStep()])
trainer.train(resume_from_checkpoint=a.resume)
print(f"ended at global step {trainer.state.global_step}", flush=True)
