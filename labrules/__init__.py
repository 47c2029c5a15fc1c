"""The reference designs' rules, each stated once.

Constants and tiny pure functions, standard library only, each citing the guide or the provider
source it comes from. Both sides read them: the program's config checks and component intent
(components/) and the CrossGuard pack's defaults and rules (policies/rules/). The pack installs
nothing else and never imports the program, so it still loads on its own under
`pulumi preview --policy-pack policies`.
"""
