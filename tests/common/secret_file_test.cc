// Secret files (common/secret_file.h) and drawn keys (common/secure_random.h,
// common/temp_key_file.h): what is refused, and what the errors say.
#include "common/secret_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/secure_random.h"
#include "common/temp_key_file.h"
#include "testing/scratch_dir.h"

namespace serene {
namespace {

class SecretFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text, mode_t mode) {
    const std::filesystem::path p = dir_.path() / name;
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p.string();
  }
  testing::ScratchDir dir_{"serene-secret-file-test"};
};

TEST_F(SecretFileTest, AcceptsAPrivateTokenAndTrimsIt) {
  auto t = ReadTokenFile(Write("token", "  0123456789abcdef\n", 0600));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, "0123456789abcdef");
  EXPECT_TRUE(ReadTokenFile(Write("ro", "0123456789abcdef", 0400)).ok());
}

TEST_F(SecretFileTest, RefusesATokenGroupOrOthersCanRead) {
  for (mode_t mode : {0640, 0604, 0644, 0660, 0602}) {
    const std::string path = Write("token", "0123456789abcdef0123", mode);
    auto t = ReadTokenFile(path);
    ASSERT_FALSE(t.ok()) << std::oct << mode;
    char m[8];
    std::snprintf(m, sizeof m, "%04o", static_cast<unsigned>(mode));
    EXPECT_EQ(t.status().message(),
              "token file '" + path + "' has mode " + m +
                  ": group or others can read or write it, so it is no secret; make it private "
                  "to its owner: chmod 600 " +
                  path);
  }
}

TEST_F(SecretFileTest, RefusesAShortToken) {
  const std::string path = Write("token", "fifteen-bytes!!\n", 0600);
  auto t = ReadTokenFile(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("token file '" + path +
                                      "' holds 15 bytes; a token needs at least 16"),
            std::string::npos)
      << t.status().message();
  EXPECT_NE(t.status().message().find("head -c 24 /dev/urandom | base64 > " + path),
            std::string::npos);
  EXPECT_TRUE(ReadTokenFile(Write("token16", "sixteen-bytes!!!", 0600)).ok());
}

TEST_F(SecretFileTest, MissingEmptyAndNotRegularFilesAreNamed) {
  auto missing = ReadTokenFile((dir_.path() / "none").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read token file"), std::string::npos);
  auto empty = ReadTokenFile(Write("empty", " \n", 0600));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("is empty; put a secret in it"), std::string::npos);
  auto dir = ReadTokenFile(dir_.path().string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is not a regular file"), std::string::npos);
}

TEST_F(SecretFileTest, KeyFilesHoldOneNonZeroKey) {
  auto hex = ReadKeyFile(Write("hex", "0xC0FFEE\n", 0600));
  ASSERT_TRUE(hex.ok()) << hex.status().message();
  EXPECT_EQ(*hex, 0xC0FFEEu);
  auto dec = ReadKeyFile(Write("dec", "12345", 0600));
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(*dec, 12345u);
  for (const char* bad : {"0", "0x100000000", "key", "1 2"}) {
    auto k = ReadKeyFile(Write("bad", bad, 0600));
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_NE(k.status().message().find("does not hold a non-zero 32-bit key"), std::string::npos)
        << k.status().message();
  }
  auto shared = ReadKeyFile(Write("shared", "0xC0FFEE", 0644));
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("has mode 0644"), std::string::npos);
}

TEST_F(SecretFileTest, WriteKeyFileMakesAPrivateFileThatReadsBack) {
  const std::string path = (dir_.path() / "job.key").string();
  ASSERT_TRUE(WriteKeyFile(path, 0xDEADBEEF).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(*ReadKeyFile(path), 0xDEADBEEFu);
  EXPECT_FALSE(WriteKeyFile(path, 1).ok()) << "an existing file is not overwritten";
}

TEST(SecureRandomTest, KeysAreNonZeroAndDoNotRepeat) {
  std::set<uint32_t> keys;
  for (int i = 0; i < 1000; ++i) {
    auto k = DrawJobKey();
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_NE(*k, 0u);
    keys.insert(*k);
  }
  // 1000 draws of 32 bits collide with probability ~1e-4; a counter, a fixed
  // seed or the run's index would give far fewer distinct values per bit.
  EXPECT_GE(keys.size(), 999u);
  uint32_t ored = 0, anded = 0xFFFFFFFF;
  for (uint32_t k : keys) {
    ored |= k;
    anded &= k;
  }
  EXPECT_EQ(ored, 0xFFFFFFFFu) << "every bit is set in some key";
  EXPECT_EQ(anded, 0u) << "every bit is clear in some key";
}

TEST(TempKeyFileTest, APrivateFileThatGoesWithTheObject) {
  std::string path, dir;
  {
    auto f = TempKeyFile::Create(0x5E4E);
    ASSERT_TRUE(f.ok()) << f.status().message();
    path = (*f)->path();
    dir = std::filesystem::path(path).parent_path().string();
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_EQ(*ReadKeyFile(path), 0x5E4Eu);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace serene
