# Run at every build (target nanogpt_git_commit): writes OUT (a header defining NANOGPT_GIT_COMMIT)
# from `git describe` of SOURCE_DIR; configure_file leaves it untouched when nothing changed, so
# only build_info.cpp recompiles after a commit. Outside a git checkout the commit is "unknown".
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
file(WRITE "${OUT}.tmp" "#define NANOGPT_GIT_COMMIT \"${commit}\"\n")
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
