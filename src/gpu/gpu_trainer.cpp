// run_training_gpu (gpu_trainer.h): data, model and optimizer set up as the CPU trainer does
// (train/trainer.cpp), the steps on the GPU. Dropout seeds, batches, the learning-rate schedule
// and the checkpoint's files and state.json are the CPU run's, so either resumes the other.
#include "gpu/gpu_trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/check.h"
#include "core/config.h"
#include "core/json_util.h"
#include "core/memory.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/dataset_files.h"
#include "data/loader.h"
#include "gpu/gpu_model.h"
#include "gpu/gpu_peak.h"
#include "io/checkpoint.h"
#include "io/nanogpt_checkpoint.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/gpu_op_timer.h"
#include "kernels/op_profile.h"
#include "model/init.h"
#include "optim/lr_schedule.h"
#include "train/metrics.h"
#include "train/model_source.h"
#include "train/nanogpt_run.h"
#include "train/run_inputs.h"
#include "train/stop_request.h"
#include "train/train_state.h"

namespace nanogpt {

namespace fs = std::filesystem;

void check_gpu_training_config(const TrainConfig& c) {
  auto refuse = [](const std::string& what, const std::string& instead) {
    fail("--device=cuda does not run {} yet; {}", what, instead);
  };
  if (c.dtype == "float16") refuse("dtype = 'float16'", "use --dtype=bfloat16 (or float32)");
  if (c.zero_stage != 0) refuse("zero_stage = 1", "use --zero_stage=0 on one GPU");
}

std::string gpu_loop_gap(const TrainConfig& c) {
  if (c.optim.optimizer != "adamw") return fmt::format("optimizer = '{}'", c.optim.optimizer);
  if (c.target_loss > 0) return "target_loss (time to target)";
  if (c.optim.embedding_learning_rate > 0 || c.optim.head_learning_rate > 0) {
    return "embedding_learning_rate / head_learning_rate";
  }
  if (c.model.qk_norm_gain != 1.0) return "qk_norm_gain (QK-norm's query gain)";
  if (c.model.unet_skips) return "unet_skips (U-net skips)";
  if (c.model.attn_gain != 0.0) return "attn_gain (the attention branch's learned gain)";
  if (c.context_warmup_iters > 0) return "context_warmup_iters (the sequence-length warmup)";
  if (c.ema_decay > 0) return "ema_decay (the weights' moving average)";
  return "";
}

namespace {

class GpuTrainingRun {
 public:
  GpuTrainingRun(TrainConfig config, const TrainOptions& options)
      : config_(std::move(config)), options_(options) {}

  TrainResult run() {
    wall_ = Timer();
    setup();
    loop();
    result_.wall_seconds = wall_.seconds();
    result_.peak_rss_bytes = process_peak_rss_bytes();
    result_.peak_tracked_bytes = static_cast<int64_t>(peak_device_bytes_);
    if (!step_ms_.empty()) {
      std::vector<double> s = step_ms_;
      std::sort(s.begin(), s.end());
      result_.median_step_ms = s[s.size() / 2];
    }
    say(fmt::format(
        "done: iteration {} ({} steps in this run, {}, median {} per step), best val loss {}, "
        "checkpoint {}, peak GPU memory {}",
        result_.iter_num, result_.steps_run, format_duration(result_.wall_seconds),
        step_ms_.empty() ? std::string("n/a") : fmt::format("{:.1f} ms", result_.median_step_ms),
        result_.last_val_loss < 0 ? std::string("n/a")
                                  : fmt::format("{:.4f}", result_.best_val_loss),
        result_.checkpoint_dir.empty() ? std::string("none") : result_.checkpoint_dir,
        format_bytes(static_cast<int64_t>(peak_device_bytes_))));
    if (config_.profile) say(profile_table());
    return result_;
  }

 private:
  void say(const std::string& line) {
    if (!options_.quiet) {
      std::fputs((line + "\n").c_str(), stdout);
      std::fflush(stdout);
    }
  }

  void setup() {
    const std::string auto_note = config_.resolve_auto_dtype();  // bfloat16 on a GPU
    if (!auto_note.empty()) say(auto_note);
    config_.validate();
    CHECK(options_.comm == nullptr || options_.comm->size() == 1,
          "--device=cuda trains on one GPU in one process; data parallelism over several GPUs is "
          "not built yet (run without mpirun)");
    check_gpu_training_config(config_);
    const std::string gap = gpu_loop_gap(config_);
    CHECK(gap.empty(),
          "internal: the GPU's own loop was given {}, which it does not run (the one trainer "
          "does: run_training_on_cuda)",
          gap);
    parse_dtype(config_.dtype, dtype_);
    data_dir_ = config_.resolved_data_dir();
    meta_ = read_dataset_meta(data_dir_);
    ckpt_dir_ = checkpoint_dir_of(config_.out_dir);

    const std::string& from = config_.init_from;
    Buffer<float> loaded;
    if (from == "resume") {
      ModelConfig saved = read_checkpoint_config(ckpt_dir_);
      saved.take_dropout_from(config_.model);
      config_.model = saved;
    } else if (is_torch_checkpoint_file(from)) {
      // nanoGPT's ckpt.pt: its AdamW state and iteration go on the device after the model.
      nanogpt_ckpt_ = start_from_nanogpt(from, config_.model, loaded);
    } else if (from != "scratch") {
      ModelSource src = load_model_source(from, config_.out_dir);
      const ModelConfig configured = config_.model;
      config_.model = src.config;
      config_.model.take_dropout_from(configured);
      loaded = std::move(src.params);
    }
    const std::string meta_path = (fs::path(data_dir_) / "meta.json").string();
    const int data_vocab = meta_.is_object() && meta_.contains("vocab_size")
                               ? json_integer<int>(meta_, "vocab_size", meta_path, 1, 65536)
                               : 0;
    if (from == "scratch" && config_.model.vocab_size == 0) {
      config_.model.vocab_size = data_vocab > 0 ? data_vocab : 50257;
    }
    config_.model.validate();
    CHECK(data_vocab <= config_.model.vocab_size,
          "dataset '{}' has vocab_size {} but the model's vocab_size is {}", data_dir_, data_vocab,
          config_.model.vocab_size);

    const int B = static_cast<int>(config_.batch_size), T = config_.model.block_size;
    ctx_ = std::make_unique<cuda::CudaContext>(/*allow_tf32=*/true);
    const bool naive = config_.attention == "naive";
    const GpuMemoryPlan plan = plan_gpu_memory(config_.model, dtype_, B, T, naive);
    model_ = std::make_unique<GpuGpt>(*ctx_, config_.model, dtype_, B, T, naive,
                                      gpu_flash_kernel_from_env(), gpu_gelu_epilogue_from_env());
    if (config_.profile) timer_ = std::make_unique<cuda::GpuOpTimer>();
    const ParamTable& table = model_->table();
    host_params_ = Buffer<float>(table.total_numel());
    if (from == "scratch") {
      init_weights(table, host_params_.data(), static_cast<uint64_t>(config_.seed));
    } else if (from != "resume") {
      std::copy(loaded.begin(), loaded.end(), host_params_.begin());
    }

    LoaderConfig lc;
    lc.data_mode = config_.data_mode;
    lc.sampling = config_.sampling;
    lc.batch_size = config_.batch_size;
    lc.block_size = T;
    lc.seed = config_.seed;
    lc.vocab_size = config_.model.vocab_size;
    const auto train_files = split_files(data_dir_, "train");
    const auto val_files = split_files(data_dir_, "val");
    train_loader_ = std::make_unique<DataLoader>(train_files, lc);
    LoaderConfig ec = lc;
    ec.seed = config_.seed + 7919;
    ec.data_mode = "mmap";
    eval_loaders_[0] = std::make_unique<DataLoader>(train_files, ec);
    eval_loaders_[1] = std::make_unique<DataLoader>(val_files, ec);

    std::vector<std::string> continued;
    if (from == "resume") {
      restore();
    } else {
      model_->upload_params(host_params_.data());
    }
    if (nanogpt_ckpt_) {
      const NanoGptCheckpoint& ck = *nanogpt_ckpt_;
      if (ck.adamw && ck.adamw->has_moments) {
        model_->upload_adam_state(ck.adamw->exp_avg.data(), ck.adamw->exp_avg_sq.data());
      }
      if (ck.adamw) adam_steps_ = ck.adamw->step;
      iter_num_ = ck.iter_num;
      best_val_loss_ = ck.best_val_loss;
      continued = nanogpt_continuation_log(ck, nanogpt_adamw_outcome(ck, "adamw"),
                                           static_cast<uint64_t>(config_.seed));
      nanogpt_ckpt_.reset();
    }
    fs::create_directories(config_.out_dir);
    const std::string metrics_path = (fs::path(config_.out_dir) / "metrics.jsonl").string();
    metrics_ = MetricsLog(metrics_path, from == "resume");
    if (from == "resume") elapsed_base_ = last_elapsed_seconds(metrics_path);

    peak_ = gpu_mfu_peak(*ctx_, dtype_);
    fpt_ = flops_per_token(config_.model, table.num_params_for_mfu());
    tokens_per_iter_ = config_.batch_size * T * config_.gradient_accumulation_steps;
    const ModelConfig& m = config_.model;
    say(fmt::format(
        "model: {} layers, {} heads, {} wide, context {}, vocab {} (padded {}), bias {}, "
        "dropout {}: {:.2f}M parameters",
        m.n_layer, m.n_head, m.n_embd, m.block_size, m.vocab_size, m.padded_vocab_size(),
        m.bias ? "on" : "off", m.dropout, static_cast<double>(table.num_params_for_mfu()) / 1e6));
    say(
        fmt::format("data: {} ({} train / {} val tokens, {}, {}); {} tokens per iteration "
                    "(batch {} x block {} x accumulation {})",
                    data_dir_, train_loader_->num_tokens(), eval_loaders_[1]->num_tokens(),
                    train_loader_->mode_description(), config_.sampling, tokens_per_iter_,
                    config_.batch_size, T, config_.gradient_accumulation_steps));
    say(fmt::format(
        "compute: {} in {}, {} attention{}; {}; GPU memory planned {} (params {}, grads {}, "
        "AdamW {}, activations {}, classifier {}, scratch {})",
        cuda::device_description(), config_.dtype,
        !model_->flash_attention()                       ? "naive (cuBLAS)"
        : model_->flash_kernel() == GpuFlashKernel::kMma ? "flash (mma)"
                                                         : "flash (wmma)",
        model_->gelu_epilogue() ? ", GELU in the matmul epilogues" : "", peak_.description,
        format_bytes(plan.total()), format_bytes(plan.params), format_bytes(plan.grads),
        format_bytes(plan.optimizer), format_bytes(plan.activations), format_bytes(plan.classifier),
        format_bytes(plan.scratch)));
    if (from == "resume") {
      say(fmt::format("resumed from {} at iteration {} (best val loss {:.4f})", ckpt_dir_,
                      iter_num_, best_val_loss_));
    }
    for (const auto& line : continued) say(line);
    note_device_memory();
  }

  void restore() {
    const ParamTable& table = model_->table();
    Buffer<float> m(table.total_numel()), v(table.total_numel());
    LoadedCheckpoint ck = load_checkpoint(ckpt_dir_, config_.model, table, host_params_.data(),
                                          {{"m", m.data()}, {"v", v.data()}});
    const TrainingState s = training_state_from_json(ck.state, ck.dir + "/state.json");
    CHECK(s.optimizer.empty() || s.optimizer == "adamw",
          "{}/state.json: the checkpoint was trained with optimizer '{}'; --device=cuda runs AdamW "
          "only (resume it with --device=cpu)",
          ck.dir, s.optimizer);
    iter_num_ = s.iter_num;
    best_val_loss_ = s.best_val_loss;
    adam_steps_ = s.optimizer_steps;
    train_loader_->set_state(s.train_loader);
    model_->upload_params(host_params_.data());
    model_->upload_adam_state(m.data(), v.data());
  }

  nlohmann::json training_state() {
    nlohmann::json s;
    s["state_version"] = kTrainingStateVersion;
    s["iter_num"] = iter_num_;
    s["best_val_loss"] = best_val_loss_;
    s["optimizer"] = "adamw";
    s["optimizer_steps"] = adam_steps_;
    s["train_loader"] = train_loader_->state().to_json();
    s["config"] = config_to_json(config_);
    s["data_dir"] = fs::absolute(data_dir_).string();
    s["tokenizer_meta"] = meta_;
    s["device"] = "cuda";
    return s;
  }

  void save() {
    const ParamTable& table = model_->table();
    Buffer<float> m(table.total_numel()), v(table.total_numel());
    model_->download_params(host_params_.data());
    model_->download_adam_state(m.data(), v.data());
    Timer t;
    try {
      save_checkpoint(
          ckpt_dir_, config_.model, table, host_params_.data(), {{"m", m.data()}, {"v", v.data()}},
          {{"optimizer", "adamw"}, {"steps", std::to_string(adam_steps_)}}, training_state());
    } catch (const Error& e) {
      fail("{}; training stopped at iteration {}: the last good checkpoint in {} is unchanged",
           e.what(), iter_num_, ckpt_dir_);
    }
    result_.checkpoint_dir = ckpt_dir_;
    saved_at_ = iter_num_;
    say(fmt::format("saved checkpoint to {} ({:.0f} ms)", ckpt_dir_, t.ms()));
  }

  std::pair<double, double> estimate_loss() {
    const int B = static_cast<int>(config_.batch_size), T = config_.model.block_size;
    std::vector<int32_t> in(static_cast<size_t>(B) * T), tg(in.size());
    double out[2] = {0, 0};
    for (int split = 0; split < 2; ++split) {
      eval_loaders_[split]->reset();
      double sum = 0;
      for (int64_t k = 0; k < config_.eval_iters; ++k) {
        eval_loaders_[split]->next_batch(in.data(), tg.data());
        sum += model_->forward(in.data(), tg.data(), B, T, /*training=*/false, 0, 1.0f);
      }
      out[split] = sum / static_cast<double>(config_.eval_iters);
    }
    return {out[0], out[1]};
  }

  void evaluate_and_maybe_save() {
    Timer t;
    auto [train_loss, val_loss] = estimate_loss();
    say(fmt::format("step {}: train loss {:.4f}, val loss {:.4f} ({:.0f} ms)", iter_num_,
                    train_loss, val_loss, t.ms()));
    nlohmann::ordered_json rec;
    rec["iter"] = iter_num_;
    rec["train_loss"] = train_loss;
    rec["val_loss"] = val_loss;
    rec["elapsed_s"] = elapsed_seconds();
    metrics_.write(rec);
    result_.last_val_loss = val_loss;
    const bool improved = val_loss < best_val_loss_;
    if (improved || config_.always_save_checkpoint) {
      best_val_loss_ = std::min(best_val_loss_, val_loss);
      if (iter_num_ > 0 && !config_.eval_only) save();
    }
  }

  double elapsed_seconds() const { return elapsed_base_ + wall_.seconds(); }

  // --profile=True: the GPU time of each op class per step (CUDA events around every op), with
  // its rate; "other" is step time no op accounts for (host work, launch gaps, synchronization).
  std::string profile_table() const {
    if (profile_.steps() == 0) return "profile: no steps timed";
    const double steps = static_cast<double>(profile_.steps());
    const double step_ms = profile_.step_seconds() / steps * 1e3;
    std::string out = fmt::format(
        "profile over {} steps (GPU time per op class, CUDA events; {:.1f} ms per step):\n"
        "  {:<12} {:>9} {:>7} {:>10} {:>9}\n",
        profile_.steps(), step_ms, "class", "ms/step", "share", "TFLOP/s", "GB/s");
    double accounted = 0;
    for (int c = 0; c < static_cast<int>(OpClass::kCount); ++c) {
      const OpStats& s = profile_.stats(static_cast<OpClass>(c));
      if (s.calls == 0) continue;
      const double ms = s.seconds / steps * 1e3;
      accounted += ms;
      out += fmt::format("  {:<12} {:>9.2f} {:>6.1f}% {:>10.1f} {:>9.0f}\n",
                         op_class_name(static_cast<OpClass>(c)), ms, 100 * ms / step_ms,
                         s.seconds > 0 ? s.flops / s.seconds / 1e12 : 0.0,
                         s.seconds > 0 ? s.bytes / s.seconds / 1e9 : 0.0);
    }
    out += fmt::format("  {:<12} {:>9.2f} {:>6.1f}%", "other", step_ms - accounted,
                       100 * (step_ms - accounted) / step_ms);
    return out;
  }

  void note_device_memory() {
    peak_device_bytes_ = std::max(peak_device_bytes_, cuda::device_memory_used());
  }

  void loop() {
    const int B = static_cast<int>(config_.batch_size), T = config_.model.block_size;
    const int64_t accum = config_.gradient_accumulation_steps;
    std::vector<int32_t> in(static_cast<size_t>(B) * T), tg(in.size());
    double running_mfu = -1;
    for (;;) {
      const bool eval_now = iter_num_ % config_.eval_interval == 0 ||
                            iter_num_ == config_.max_iters || config_.eval_only;
      if (eval_now) evaluate_and_maybe_save();
      if (config_.eval_only || iter_num_ >= config_.max_iters) break;
      if (stop_.requested() || (config_.max_wall_minutes > 0 &&
                                wall_.seconds() + (step_ms_.empty() ? 0 : step_ms_.back() / 1e3) >=
                                    config_.max_wall_minutes * 60.0)) {
        const std::string why =
            stop_.requested() ? StopRequest::signal_name(stop_.signal())
                              : fmt::format("max_wall_minutes = {:g}", config_.max_wall_minutes);
        if (iter_num_ > 0 && saved_at_ != iter_num_) save();
        result_.stopped_by = why;
        say(fmt::format("stopped by {} before iteration {} (of {}): {}; exit status {}", why,
                        iter_num_, config_.max_iters,
                        result_.checkpoint_dir.empty()
                            ? std::string("no step taken, no checkpoint written")
                            : fmt::format("checkpoint {}, continue with --init_from=resume",
                                          result_.checkpoint_dir),
                        kStoppedExitCode));
        break;
      }
      Timer step_timer;
      // Training steps only (not evaluations), after two steps of warm-up (cuBLASLt's heuristics).
      const bool timed_step = timer_ && result_.steps_run >= 2;
      model_->set_timer(timed_step ? timer_.get() : nullptr);
      const double lr = learning_rate_at(config_.optim, iter_num_);
      double loss_sum = 0;
      for (int64_t micro = 0; micro < accum; ++micro) {
        train_loader_->next_batch(in.data(), tg.data());
        loss_sum += model_->forward(in.data(), tg.data(), B, T, /*training=*/true,
                                    dropout_seed_for(config_.seed, iter_num_, micro),
                                    1.0f / static_cast<float>(accum));
        model_->backward();
      }
      const double norm = model_->grad_norm();
      const double loss = loss_sum / static_cast<double>(accum);
      CHECK(std::isfinite(loss) && std::isfinite(norm),
            "iter {}: the {} is not finite (loss {}, gradient norm {}); training stopped before "
            "the optimizer step, nothing was saved. Lower learning_rate (lr {:.3e}) or raise "
            "warmup_iters, and resume from the last checkpoint with --init_from=resume",
            iter_num_, std::isfinite(loss) ? "gradient norm" : "loss", loss, norm, lr);
      const double max_norm = config_.optim.grad_clip;
      const float clip = max_norm > 0 && max_norm / (norm + 1e-6) < 1.0
                             ? static_cast<float>(max_norm / (norm + 1e-6))
                             : 1.0f;
      ++adam_steps_;
      model_->adamw_step(lr, config_.optim.beta1, config_.optim.beta2, 1e-8,
                         config_.optim.weight_decay, clip, adam_steps_);
      model_->zero_grad();
      ctx_->synchronize("the training step");
      const double ms = step_timer.ms();
      model_->set_timer(nullptr);
      if (timed_step) {
        timer_->flush(profile_);
        profile_.add_step(ms / 1e3);
      }
      step_ms_.push_back(ms);
      result_.last_train_loss = loss;
      ++result_.steps_run;
      note_device_memory();
      const double mfu = model_flops_utilization(fpt_, static_cast<double>(tokens_per_iter_),
                                                 ms / 1e3, peak_.flops_per_s);
      running_mfu = running_mfu < 0 ? mfu : 0.9 * running_mfu + 0.1 * mfu;
      const double tok_s = static_cast<double>(tokens_per_iter_) / (ms / 1e3);
      if (iter_num_ % config_.log_interval == 0) {
        say(fmt::format(
            "iter {}: loss {:.4f}, time {:.1f}ms, mfu {:.1f}%, {:.0f} tok/s, lr {:.3e}, "
            "norm {:.3f}, GPU mem {}",
            iter_num_, loss, ms, running_mfu * 100, tok_s, lr, norm,
            format_bytes(static_cast<int64_t>(peak_device_bytes_))));
        nlohmann::ordered_json rec;
        rec["iter"] = iter_num_;
        rec["loss"] = loss;
        rec["lr"] = lr;
        rec["grad_norm"] = norm;
        rec["ms"] = ms;
        rec["tokens_per_s"] = tok_s;
        rec["mfu"] = mfu;
        rec["peak_gpu_mem_bytes"] = peak_device_bytes_;
        rec["elapsed_s"] = elapsed_seconds();
        metrics_.write(rec);
      }
      ++iter_num_;
    }
    result_.iter_num = iter_num_;
    result_.best_val_loss = best_val_loss_;
  }

  TrainConfig config_;
  TrainOptions options_;
  DType dtype_ = DType::kBF16;
  std::string data_dir_, ckpt_dir_;
  nlohmann::json meta_;
  std::unique_ptr<cuda::CudaContext> ctx_;
  std::unique_ptr<GpuGpt> model_;
  Buffer<float> host_params_;
  std::unique_ptr<DataLoader> train_loader_;
  std::unique_ptr<DataLoader> eval_loaders_[2];
  MetricsLog metrics_;
  StopRequest stop_;
  GpuPeak peak_;
  std::unique_ptr<cuda::GpuOpTimer> timer_;  // --profile=True
  OpProfile profile_;
  double fpt_ = 0;
  int64_t tokens_per_iter_ = 0;
  std::unique_ptr<NanoGptCheckpoint> nanogpt_ckpt_;  // init_from=<ckpt.pt>, until set up
  int64_t iter_num_ = 0, adam_steps_ = 0, saved_at_ = -1;
  double best_val_loss_ = 1e9;
  double elapsed_base_ = 0;
  size_t peak_device_bytes_ = 0;
  Timer wall_;
  std::vector<double> step_ms_;
  TrainResult result_;
};

}  // namespace

TrainResult run_training_gpu(TrainConfig config, const TrainOptions& options) {
  GpuTrainingRun run(std::move(config), options);
  return run.run();
}

}  // namespace nanogpt
