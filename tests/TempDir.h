// A fresh temporary directory per GoogleTest test, removed at the end; shared by the test executables.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace flowscope::test {

class TempDir {
  public:
    // <tmp>/flowscope_<prefix>_<pid>_<suite>_<test>; '/' of parameterised test names become '_'.
    explicit TempDir(const std::string& prefix = "test") {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = "flowscope_" + prefix + "_" + std::to_string(::getpid()) + "_" +
                           info->test_suite_name() + "_" + info->name();
        std::replace(name.begin(), name.end(), '/', '_');
        path_ = std::filesystem::temp_directory_path() / name;
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string file(const std::string& name) const { return (path_ / name).string(); }
    const std::filesystem::path& path() const { return path_; }
    std::string str() const { return path_.string(); }
    // Names of the entries in the directory, sorted.
    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& e : std::filesystem::directory_iterator(path_))
            names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }

  private:
    std::filesystem::path path_;
};

} // namespace flowscope::test
