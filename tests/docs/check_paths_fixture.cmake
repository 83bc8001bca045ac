# Runs check_paths.py on a copy of fixtures/paths, with two files added that hold what must never
# appear in the repository itself, and checks that it fails, naming every problem by file and line
# and accepting the rest. Inputs: CHECKER, PYTHON, FIXTURE (fixtures/paths), WORK (a scratch
# folder in the build tree, removed once the checker has run).
#
# The added lines are assembled from pieces so that this file does not contain them: a
# contributor document named without docs/, a path into the folder beside the repository, and
# absolute paths of the development machines; plus a relative Markdown link from docs/ to a
# contributor document, which the checker accepts.
file(REMOVE_RECURSE ${WORK})
file(COPY ${FIXTURE}/ DESTINATION ${WORK})
# The broken paths the checker must name are assembled too, or the repository's own run would
# find them here.
set(docs "docs")
set(tests "tests")
set(core "core")
set(scenarios "scenarios")
set(doc "design")
set(up "..")
set(machine "work")
set(farm "farm")
file(WRITE ${WORK}/outside.md
     "See ${doc}.md, section 3.\n"
     "Read ${up}/shared/notes.txt.\n"
     "The binary is /${machine}/main/build/cli/dtsim.\n"
     "A log under /${farm}/logs.\n")
file(WRITE ${WORK}/docs/link.md "# Links\n\nThe [design](${doc}.md) is fine here.\n")

execute_process(COMMAND ${PYTHON} ${CHECKER} --root ${WORK} --no-git
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
# The copy has served; the test leaves nothing behind (tests/support/scratch_dir.h).
file(REMOVE_RECURSE ${WORK})
if(NOT status EQUAL 1)
  message(FATAL_ERROR "expected exit status 1 from the checker, got ${status}\n${out}${err}")
endif()
foreach(want
    "README.md:11: ${docs}/absent.md: no such file or folder"
    "README.md:12: ${tests}/no_such_folder/: no such file or folder"
    "README.md:13: ${core}/exec/no_such_header.h: no such file or folder"
    "README.md:14: ${scenarios}/*.nothing: no such file or folder"
    "outside.md:1: ${doc}.md: name it as docs/${doc}.md"
    "outside.md:2: ${up}/shared: a path outside the repository"
    "outside.md:3: /${machine}/: an absolute path of a development machine"
    "outside.md:4: /${farm}/: an absolute path of a development machine"
    ", 8 problems")
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the checker's output lacks:\n${want}\n--- output:\n${out}${err}")
  endif()
endforeach()
# Everything else in the fixture is accepted: the count above leaves no room, and neither file
# that must pass is named.
foreach(unwanted "present.md:" "link.md:")
  string(FIND "${out}" "${unwanted}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the checker rejected a good reference (${unwanted})\n${out}${err}")
  endif()
endforeach()
