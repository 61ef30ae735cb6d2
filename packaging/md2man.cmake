# Renders one docs/*.md page as roff with go-md2man. The page's first line, "# name(N)",
# reads well on GitHub; go-md2man takes the first heading as the .TH line, so it is
# rewritten here to "NAME N date source manual". A page's references to docs/X.md become
# DOCDIR/docs/X.md, where the package installs them (/usr/share/doc/deferd/docs).
# cmake -DMD2MAN=go-md2man -DIN=docs/deferd.md -DOUT=deferd.8 -DVERSION=0.3.0 \
#   -DDOCDIR=/usr/share/doc/deferd -P md2man.cmake
file(READ "${IN}" text)
string(REGEX MATCH "^# ([A-Za-z0-9_.-]+)\\(([1-9])\\)\n" head "${text}")
if(NOT head)
  message(FATAL_ERROR "${IN}: the first line must be '# name(section)'")
endif()
string(TOUPPER "${CMAKE_MATCH_1}" name)
set(section ${CMAKE_MATCH_2})
set(manuals_1 "User Commands")
set(manuals_5 "File Formats Manual")
set(manuals_8 "System Manager's Manual")
set(manual "${manuals_${section}}")
string(LENGTH "${head}" skip)
string(SUBSTRING "${text}" ${skip} -1 body)
if(DOCDIR)
  string(REGEX REPLACE "([^A-Za-z0-9_./-])docs/([A-Za-z0-9_.-]+\\.md)" "\\1${DOCDIR}/docs/\\2"
    body "${body}")
endif()
set(tmp "${OUT}.md")
file(WRITE "${tmp}" "# ${name} ${section} \"\" \"deferd ${VERSION}\" \"${manual}\"\n${body}")
execute_process(COMMAND "${MD2MAN}" -in "${tmp}" -out "${OUT}" RESULT_VARIABLE rc)
file(REMOVE "${tmp}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go-md2man failed on ${IN}")
endif()
