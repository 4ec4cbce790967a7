// A report page is written once, in Markdown; its HTML is md4c's rendering with the charts
// inlined (reports/page.h).
#include <catch2/catch.hpp>

#include <string>

#include "reports/page.h"

using vramsim::reports::page::html_page;

TEST_CASE("report page: the HTML is the Markdown rendered, with the page's title and style", "[report][page]") {
  const std::string html =
      html_page("A <study>", "# A study\n\nSome *text*.\n\n| card | tok/s |\n|---|---|\n| rtx-4090 | 110.0 |\n", nullptr);
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>"));
  CHECK_THAT(html, Catch::Contains("<title>A &lt;study&gt;</title>"));
  CHECK_THAT(html, Catch::Contains("<h1>A study</h1>"));
  CHECK_THAT(html, Catch::Contains("<p>Some <em>text</em>.</p>"));
  CHECK_THAT(html, Catch::Contains("<th>card</th>") && Catch::Contains("<td>110.0</td>"));
  CHECK_THAT(html, Catch::EndsWith("</body>\n</html>\n"));
  // No chart writer: no chart check script.
  CHECK_THAT(html, !Catch::Contains("data-charts-visible"));
}

TEST_CASE("report page: markup in a study's text is escaped, not passed through", "[report][page]") {
  const std::string html = html_page("t", "# t\n\nA description with <script>alert(1)</script> in it.\n", nullptr);
  CHECK_THAT(html, !Catch::Contains("<script>alert"));
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

TEST_CASE("report page: a style of the page's own follows the shared one", "[report][page]") {
  const std::string html = html_page("t", "# t\n", nullptr, "blockquote{color:#123}\n");
  const auto shared = html.find("border-collapse"), own = html.find("blockquote{color:#123}");
  REQUIRE(shared != std::string::npos);
  REQUIRE(own != std::string::npos);
  CHECK(shared < own);
}
