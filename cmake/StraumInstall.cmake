# What `cmake --install BUILD [--prefix P]` puts where (SPEC.md 8.2):
#
#   bin/                      straum-ingest, straum-serve, straum-dump
#                             (and straum-shell once tools/ builds it)
#   share/man/man1, man7/     the manual pages (tools/man/*.1, straum.7)
#   lib/libstraum-store.a     the store library: store + format + sql + base,
#                             one static archive
#   include/straum/{store,format,sql,base}/*.h   its public headers
#   lib/pkgconfig/straum-store.pc
#   share/doc/straum/examples/systemd/     example units and env file, with
#                             ExecStart= naming the prefix installed to
#
# Included last by the top-level CMakeLists.txt, once every layer has
# defined its targets.
include_guard(GLOBAL)
include(GNUInstallDirs)

# ---- Programs ------------------------------------------------------------
install(TARGETS straum-ingest straum-serve straum-dump
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET straum-shell)
  install(TARGETS straum-shell RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# ---- Manuals -------------------------------------------------------------
# Every page under tools/man (straum-shell.1 comes with straum-shell);
# CONFIGURE_DEPENDS so that a page added later is installed without a
# manual re-configure.
file(GLOB _straum_man1 CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tools/man/*.1)
file(GLOB _straum_man7 CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tools/man/*.7)
install(FILES ${_straum_man1} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
if(_straum_man7)
  install(FILES ${_straum_man7} DESTINATION ${CMAKE_INSTALL_MANDIR}/man7)
endif()

# ---- The store library ---------------------------------------------------
# One archive of the objects of straum_store, straum_format, straum_sql and
# straum_base (which the other three call), so an outside program links
# -lstraum-store rather than four internal names. Its dependencies come from pkg-config (Requires.private).
add_library(straum_store_dist STATIC
            $<TARGET_OBJECTS:straum_store>
            $<TARGET_OBJECTS:straum_format>
            $<TARGET_OBJECTS:straum_sql>
            $<TARGET_OBJECTS:straum_base>)
set_target_properties(straum_store_dist PROPERTIES OUTPUT_NAME straum-store
                      LINKER_LANGUAGE C
                      ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
install(TARGETS straum_store_dist ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The public API is store/store.h and what it includes; installed under
# include/straum/ so that "store/store.h" resolves with -I<includedir>/straum.
install(FILES ${PROJECT_SOURCE_DIR}/store/store.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/straum/store)
install(FILES ${PROJECT_SOURCE_DIR}/format/format.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/straum/format)
install(FILES ${PROJECT_SOURCE_DIR}/sql/sql.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/straum/sql)
# base/ is all front doors; the store's headers include some of them.
file(GLOB _straum_base_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/base/*.h)
install(FILES ${_straum_base_headers}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/straum/base)

# The .pc file finds its prefix from where it lies (${pcfiledir}), so it
# stays right under `cmake --install --prefix P` and DESTDIR staging.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(STRAUM_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _rel "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" _rel "${_rel}")
  set(STRAUM_PC_PREFIX "\${pcfiledir}/${_rel}")
endif()
# A sanitizer build's archive needs the sanitizer runtimes of the compiler
# that built it (link with that compiler).
set(STRAUM_PC_LIBS_PRIVATE "-pthread -lm")
if(STRAUM_SANITIZE OR STRAUM_FUZZ)
  list(JOIN STRAUM_SANITIZER_FLAGS " " _san)
  string(APPEND STRAUM_PC_LIBS_PRIVATE " ${_san}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/store/straum-store.pc.in
               ${PROJECT_BINARY_DIR}/lib/pkgconfig/straum-store.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/lib/pkgconfig/straum-store.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- systemd units (examples) --------------------------------------------
# Configured at install time, so ExecStart= names the bin directory of the
# prefix actually installed to (cmake --install --prefix P), not the one
# configured. DESTDIR stages the files but is not part of the paths in them.
set(_straum_units_dest ${CMAKE_INSTALL_DATAROOTDIR}/doc/straum/examples/systemd)
foreach(_unit IN ITEMS straum-ingest.service straum-serve@.service straum.env)
  install(CODE "
    set(STRAUM_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
    if(IS_ABSOLUTE \"${CMAKE_INSTALL_BINDIR}\")
      set(STRAUM_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
    endif()
    set(_dest \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${_straum_units_dest}/${_unit}\")
    message(STATUS \"Installing: \${_dest}\")
    configure_file(\"${PROJECT_SOURCE_DIR}/tools/systemd/${_unit}\" \"\${_dest}\" @ONLY)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${_dest}\")
  ")
endforeach()
