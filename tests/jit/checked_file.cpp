// Checked files (jit/checked_file.hpp): every truncation and changed byte is
// found; directories are made 0700 and files 0600 whatever the umask; a
// directory or file someone else could have written is neither read nor
// written, with one warning naming it; a symbolic link is never followed;
// CANOPY_CACHE_SHARED=group trusts the group, and a bad value is an error;
// a cache lock keeps a second holder waiting.
#include <doctest/doctest.h>

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <canopy/ir/error.hpp>
#include <canopy/jit/checked_file.hpp>

#include "jit_test_support.hpp"
#include "scoped_setting.hpp"

using namespace canopy::jit;
using canopy::jit::testing::read_all;
using canopy::jit::testing::StderrCapture;
using canopy::jit::testing::TempDir;
using canopy::jit::testing::write_all;
namespace fs = std::filesystem;

namespace {

unsigned mode_of(const fs::path& path) {
  struct stat info {};
  REQUIRE(::lstat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

using ScopedEnv = canopy::testing::ScopedSetting;

}  // namespace

TEST_CASE("checked framing: round trips, and every truncation or changed byte is found") {
  const std::string trailer_inside = "text\ncanopy-checksum 0000000000000000 4\nmore";
  for (const std::string& payload : {std::string(), std::string("a line\n"), std::string(300, '\0'), trailer_inside}) {
    const std::string file = frame_checked(payload);
    REQUIRE(unframe_checked(file).has_value());
    CHECK(*unframe_checked(file) == payload);
    for (std::size_t length = 0; length < file.size(); ++length)
      CHECK_FALSE(unframe_checked(std::string_view(file).substr(0, length)).has_value());
    for (std::size_t at = 0; at < file.size(); ++at) {
      std::string bad = file;
      bad[at] = static_cast<char>(bad[at] ^ 0x21);
      CHECK_FALSE(unframe_checked(bad).has_value());
    }
    CHECK_FALSE(unframe_checked(file + "x").has_value());
  }
  // A text payload stays readable: the checksum is one more line.
  CHECK(frame_checked("model\n").rfind("model\n\ncanopy-checksum ", 0) == 0);
}

TEST_CASE("checked files: directories 0700 and files 0600 whatever the umask; read back whole") {
  TempDir dir;
  const fs::path path = dir.path() / "new" / "deeper" / "entry.txt";
  const mode_t old_umask = ::umask(0);
  const CheckedWrite wrote = write_checked_file(path.string(), "payload", CacheSharing::Private);
  ::umask(old_umask);
  REQUIRE(wrote.written);
  CHECK(mode_of(dir.path() / "new") == 0700);
  CHECK(mode_of(dir.path() / "new" / "deeper") == 0700);
  CHECK(mode_of(path) == 0600);
  const CheckedRead read = read_checked_file(path.string(), CacheSharing::Private);
  CHECK(read.state == FileState::Whole);
  CHECK(read.payload == "payload");
  CHECK(read_checked_file((dir.path() / "missing").string(), CacheSharing::Private).state == FileState::Missing);
  write_all(path, "payload");
  const CheckedRead damaged = read_checked_file(path.string(), CacheSharing::Private);
  CHECK(damaged.state == FileState::Damaged);
  CHECK(damaged.why.find(path.string()) == 0);
  // Only the entry is left: no temporary file.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(path.parent_path())) ++files;
  CHECK(files == 1);
}

TEST_CASE("checked files: a directory or file others could write is neither read nor written") {
  TempDir dir;
  const fs::path path = dir.path() / "entry";
  REQUIRE(write_checked_file(path.string(), "trusted", CacheSharing::Private).written);

  SUBCASE("a directory others may write, warned about once") {
    fs::permissions(dir.path(), fs::perms::all);  // 0777
    StderrCapture captured;
    const CheckedRead read = read_checked_file(path.string(), CacheSharing::Private);
    const CheckedWrite wrote = write_checked_file((dir.path() / "other").string(), "x", CacheSharing::Group);
    const std::string warnings = captured.finish();
    CHECK(read.state == FileState::Untrusted);
    CHECK(read.payload.empty());
    CHECK_FALSE(wrote.written);
    CHECK(wrote.untrusted);
    CHECK_FALSE(fs::exists(dir.path() / "other"));
    CHECK(warnings == "canopy: not using the cache directory " + dir.str() +
                          ": others may write it (mode 0777); Canopy computes what it would have read\n");
  }
  SUBCASE("a directory its group may write: refused unless the group is trusted") {
    fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_all);  // 0770, our own group
    StderrCapture captured;
    CHECK(read_checked_file(path.string(), CacheSharing::Private).state == FileState::Untrusted);
    CHECK(captured.finish().find("CANOPY_CACHE_SHARED=group") != std::string::npos);
    CHECK(read_checked_file(path.string(), CacheSharing::Group).state == FileState::Whole);
  }
  SUBCASE("a file its group or others may write") {
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_write);
    StderrCapture captured;
    CHECK(read_checked_file(path.string(), CacheSharing::Private).state == FileState::Untrusted);
    CHECK(read_checked_file(path.string(), CacheSharing::Group).state == FileState::Whole);
    fs::permissions(path, fs::perms::others_write, fs::perm_options::add);
    CHECK(read_checked_file(path.string(), CacheSharing::Group).state == FileState::Untrusted);
    CHECK(captured.finish().find(path.string()) != std::string::npos);
  }
  SUBCASE("a symbolic link is never read through, and a write replaces it instead of following it") {
    const fs::path target = dir.path() / "target";
    REQUIRE(write_checked_file(target.string(), "elsewhere", CacheSharing::Private).written);
    const std::string target_bytes = read_all(target);
    const fs::path link = dir.path() / "link";
    fs::create_symlink(target, link);
    StderrCapture captured;
    const CheckedRead read = read_checked_file(link.string(), CacheSharing::Private);
    captured.finish();
    CHECK(read.state == FileState::Untrusted);
    CHECK(read.why.find("symbolic link") != std::string::npos);
    REQUIRE(write_checked_file(link.string(), "new", CacheSharing::Private).written);
    CHECK(read_all(target) == target_bytes);
    CHECK_FALSE(fs::is_symlink(link));
    CHECK(read_checked_file(link.string(), CacheSharing::Private).payload == "new");
  }
  SUBCASE("owned by another user") {
    if (::geteuid() != 0) {
      MESSAGE("not root: cannot give a file to another user here; the mode checks above still ran");
      return;
    }
    REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
    StderrCapture captured;
    CHECK(read_checked_file(path.string(), CacheSharing::Private).state == FileState::Untrusted);
    REQUIRE(::chown(path.c_str(), 0, 0) == 0);
    REQUIRE(::chown(dir.str().c_str(), 65534, 65534) == 0);
    const CheckedRead read = read_checked_file(path.string(), CacheSharing::Private);
    const std::string warnings = captured.finish();
    CHECK(read.state == FileState::Untrusted);
    CHECK(read.why.find("owned by user id 65534") != std::string::npos);
    CHECK(warnings.find("owned by user id 65534") != std::string::npos);
  }
}

TEST_CASE("CANOPY_CACHE_SHARED: unset is private, 'group' is group, anything else is an error naming it") {
  {
    ScopedEnv unset("CANOPY_CACHE_SHARED", "");
    CHECK(cache_sharing_from_environment() == CacheSharing::Private);
  }
  {
    ScopedEnv group("CANOPY_CACHE_SHARED", "group");
    CHECK(cache_sharing_from_environment() == CacheSharing::Group);
  }
  ScopedEnv bad("CANOPY_CACHE_SHARED", "everyone");
  try {
    canopy::Settings::from_environment();
    FAIL("no error");
  } catch (const canopy::Error& e) {
    const std::string message = e.what();
    CHECK(message.find("CANOPY_CACHE_SHARED='everyone'") != std::string::npos);
    CHECK(message.find("'group'") != std::string::npos);
  }
}

TEST_CASE("cache lock: a second holder waits for the first; never taken through a link or in an untrusted place") {
  TempDir dir;
  const fs::path path = dir.path() / "made" / "work.lock";
  std::optional<CacheLock> first(std::in_place, path.string(), CacheSharing::Private);
  REQUIRE(first->held());
  CHECK(mode_of(dir.path() / "made") == 0700);
  CHECK(mode_of(path) == 0600);
  // A child process asks for the same lock: it may not get it while the
  // parent holds it, and gets it once the parent lets go.
  int to_parent[2];
  REQUIRE(::pipe(to_parent) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(to_parent[0]);
    first.reset();  // the child's copy of the parent's file: the lock stays with the parent's
    const CacheLock second(path.string(), CacheSharing::Private);
    const char got = second.held() ? 'y' : 'n';
    const bool sent = ::write(to_parent[1], &got, 1) == 1;
    ::_exit(sent ? 0 : 1);
  }
  ::close(to_parent[1]);
  pollfd waiting{to_parent[0], POLLIN, 0};
  CHECK(::poll(&waiting, 1, 300) == 0);  // nothing within 0.3 s: the child waits
  first.reset();
  char got = 0;
  CHECK(::read(to_parent[0], &got, 1) == 1);
  CHECK(got == 'y');
  ::close(to_parent[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));

  SUBCASE("a symbolic link in its place is not followed") {
    const fs::path target = dir.path() / "target", link = dir.path() / "link.lock";
    fs::create_symlink(target, link);
    const CacheLock lock(link.string(), CacheSharing::Private);
    CHECK_FALSE(lock.held());
    CHECK_FALSE(fs::exists(target));
  }
  SUBCASE("a directory others may write") {
    fs::permissions(dir.path(), fs::perms::all);
    StderrCapture captured;  // the warning, if any, is not the point here
    const CacheLock lock((dir.path() / "other.lock").string(), CacheSharing::Private);
    captured.finish();
    CHECK_FALSE(lock.held());
    CHECK_FALSE(fs::exists(dir.path() / "other.lock"));
  }
}
