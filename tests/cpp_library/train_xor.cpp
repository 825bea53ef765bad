// A user's program, built only with `pkg-config --cflags --libs weir`: it trains a small model, so
// every op, kernel and optimizer it uses must have registered itself when libweir.so loaded.
#include <weir/weir.hpp>

#include <cstdio>

int main() {
  weir::JobBuilder builder("xor", weir::JobType::kTrain);
  const weir::Blob x = builder.Placeholder("x", weir::Shape{4, 2});
  const weir::Blob y = builder.Placeholder("y", weir::Shape{4}, weir::DType::kI32);
  const weir::Initializer init = weir::TruncatedNormalInitializer(0.0, 1.0, /*seed=*/7);
  const weir::Blob hidden =
      weir::Dense(x, 8, {.activation = weir::Activation::kTanh, .kernel_initializer = init, .name = "hidden"});
  const weir::Blob logits = weir::Dense(hidden, 2, {.kernel_initializer = init, .name = "output"});
  const weir::Blob loss = weir::SparseSoftmaxCrossEntropy(y, logits);
  builder.Minimize(weir::Sgd(weir::PiecewiseConstantScheduler({}, {0.5}), /*momentum=*/0.9), loss);
  builder.Output("loss", weir::ReduceMean(loss));
  const weir::Job job = builder.Build();

  weir::Tensor inputs(weir::Shape{4, 2}, weir::DType::kF32);
  weir::Tensor labels(weir::Shape{4}, weir::DType::kI32);
  const float points[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  for (int i = 0; i < 4; ++i) {
    inputs.Data<float>()[2 * i] = points[i][0];
    inputs.Data<float>()[2 * i + 1] = points[i][1];
    labels.Data<std::int32_t>()[i] = (i == 1 || i == 2) ? 1 : 0;
  }
  weir::Session session;
  float first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    const weir::Outputs out = session.Call(job, {inputs, labels});
    last = out["loss"].Data<float>()[0];
    if (step == 0) first = last;
  }
  std::printf("xor loss %.4f -> %.4f\n", first, last);
  return last < 0.1f * first ? 0 : 1;
}
