// storage/file_io.hpp: the two-piece write_all the log appends a record
// with (its header, then the payload from where it lies).
#include "ebb/storage/file_io.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ebb::storage {
namespace {

TEST(FileIo, TwoPiecesLandInOrderWhateverTheirSizes) {
  const auto dir = std::filesystem::temp_directory_path() / ("ebb_file_io_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "pieces";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const std::string big(3 << 20, 'b');  // a regular file takes it whole (the short-write branch needs a full disk)
  write_all(fd, "head", "tail", path);
  write_all(fd, "", "x", path);
  write_all(fd, "y", "", path);
  write_all(fd, "H", big, path);
  ::close(fd);
  EXPECT_EQ(read_whole_file(path), "headtailxyH" + big);
  // A descriptor that cannot be written names the file.
  try {
    write_all(-1, "a", "b", path);
    ADD_FAILURE() << "wrote to fd -1";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write '" + path.string() + "'"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb::storage
