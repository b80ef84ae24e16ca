package meta

// The answer type every query declares (For).
func (*ExportSlot) answer() *SlotChunk              { return nil }
func (*ExportChanges) answer() *ChangeChunk         { return nil }
func (*GetChannel) answer() *Channel                { return nil }
func (*GetChannelMember) answer() *ChannelMember    { return nil }
func (*GetChannelTask) answer() *ChannelTask        { return nil }
func (*GetCmdBinding) answer() *CmdBinding          { return nil }
func (*GetDevice) answer() *Device                  { return nil }
func (*GetKV) answer() *KV                          { return nil }
func (*GetMembership) answer() *Membership          { return nil }
func (*GetRuntime) answer() *ChannelRuntime         { return nil }
func (*GetUser) answer() *User                      { return nil }
func (*ListChannelTasks) answer() *ChannelTaskPage  { return nil }
func (*ListCmdBindings) answer() *CmdBindingPage    { return nil }
func (*ListDevices) answer() *DevicePage            { return nil }
func (*ListEvents) answer() *EventPage              { return nil }
func (*ListMemberships) answer() *MembershipPage    { return nil }
func (*ListUserPlugins) answer() *PluginPage        { return nil }
func (*ScanChannelList) answer() *ChannelMemberPage { return nil }
func (*ScanOutbox) answer() *OutboxPage             { return nil }
func (*ScanPluginUsers) answer() *PluginPage        { return nil }
func (*ScanSystemUIDs) answer() *SystemUIDPage      { return nil }
func (*ScanUsers) answer() *UserPage                { return nil }
