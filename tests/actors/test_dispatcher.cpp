// The dispatcher alone: completion out of order, release in order, callbacks on their own thread.
#include <doctest/doctest.h>

#include <thread>

#include "actors/dispatcher.hpp"

using weir::internal::CallRecord;
using weir::internal::Dispatcher;

TEST_CASE("calls completed out of order are released in call order") {
  Dispatcher dispatcher(64);
  std::vector<std::int64_t> released;
  std::vector<std::shared_ptr<CallRecord>> records;
  for (int i = 0; i < 10; ++i) {
    auto record = std::make_shared<CallRecord>();
    record->is_sync = false;
    record->callback = [&](CallRecord& done) { released.push_back(done.call_id); };
    dispatcher.Admit(record, [] {});
    records.push_back(record);
  }
  for (int i = 9; i >= 0; --i) dispatcher.Complete(records[static_cast<std::size_t>(i)].get());
  dispatcher.Sync();
  CHECK(released == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("admission blocks at max_in_flight until a call completes") {
  Dispatcher dispatcher(2);
  auto a = std::make_shared<CallRecord>();
  auto b = std::make_shared<CallRecord>();
  auto c = std::make_shared<CallRecord>();
  dispatcher.Admit(a, [] {});
  dispatcher.Admit(b, [] {});
  std::atomic<bool> admitted{false};
  std::thread third([&] {
    dispatcher.Admit(c, [] {});
    admitted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(admitted);
  dispatcher.Complete(a.get());
  third.join();
  CHECK(admitted);
  dispatcher.Complete(b.get());
  dispatcher.Complete(c.get());
  a->promise.get_future().get();
  c->promise.get_future().get();
}

TEST_CASE("a closed dispatcher refuses calls and fails what is outstanding") {
  auto dispatcher = std::make_unique<Dispatcher>(8);
  auto pending = std::make_shared<CallRecord>();
  dispatcher->Admit(pending, [] {});
  dispatcher->Close();
  CHECK_THROWS_AS(dispatcher->Admit(std::make_shared<CallRecord>(), [] {}), std::runtime_error);
  CHECK_FALSE(dispatcher->WaitAllCompleted(std::chrono::milliseconds(10)));
  dispatcher->FailOutstanding(std::make_exception_ptr(std::runtime_error("gone")));
  auto future = pending->promise.get_future();
  future.get();
  CHECK(pending->Error() != nullptr);
}
